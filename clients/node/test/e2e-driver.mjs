// Drives the Node client against a running center (run by
// clients/e2e_test.go). Environment as for the Python driver: EC_URL,
// EC_TOKEN, EC_BIZ, EC_SECRET, EC_GOOD_PORT, EC_BAD_PORT, EC_VECTOR.
// Prints one JSON object.
import http from 'node:http';
import { ApiError, Client, COMMIT, ROLLBACK, SignatureError, checkbackHandler, settled, verifySignature } from '../eventcenter.mjs';

const env = process.env;
const biz = env.EC_BIZ;
const secret = env.EC_SECRET;
const client = new Client(env.EC_URL, { token: env.EC_TOKEN });
const out = {};

// A signature the center's own code made, and tampered copies.
const v = JSON.parse(env.EC_VECTOR);
const req = { method: v.method, host: v.host, target: v.target };
out.vector_ok = verifySignature(v.header, req, [secret], { nowSeconds: v.now }) !== '';
const refused = {};
for (const [name, r, s, now] of [
  ['target', { ...req, target: v.target + 'x' }, secret, v.now],
  ['host', { ...req, host: 'other:1' }, secret, v.now],
  ['secret', req, 'wrong', v.now],
  ['stale', req, secret, v.now + 3600],
]) {
  try {
    verifySignature(v.header, r, [s], { nowSeconds: now });
    refused[name] = 'accepted';
  } catch (err) {
    refused[name] = err instanceof SignatureError ? err.message : 'other: ' + err;
  }
}
out.vector_refused = refused;

// Check-back servers: decisions for keys whose "local transaction" committed.
const committed = new Set([`${biz}-checkback`]);
const calls = { good: 0, bad: 0 };
const decider = (name) => async (bizId, key) => {
  calls[name]++;
  return committed.has(key) ? COMMIT : ROLLBACK;
};
const servers = [];
for (const [name, port, secrets] of [['good', env.EC_GOOD_PORT, [secret]], ['bad', env.EC_BAD_PORT, ['not-the-secret']]]) {
  const srv = http.createServer(checkbackHandler(decider(name), { secrets }));
  await new Promise((resolve) => srv.listen(Number(port), '127.0.0.1', resolve));
  servers.push(srv);
}
const good = `http://127.0.0.1:${env.EC_GOOD_PORT}/checkback`;
const badUrl = `http://127.0.0.1:${env.EC_BAD_PORT}/checkback`;

// 1. transact, local transaction commits.
out.commit_result = await client.transact(biz, `${biz}-commit`, `payload ${biz}`.repeat(40), 'orders.events',
  async () => 'saved', { fkey: `${biz}-commit`, verify: good, headers: { 'Trace-Id': `t-${biz}` } });

// 2. transact, local transaction fails: rolled back, the error goes on.
try {
  await client.transact(biz, `${biz}-rollback`, 'never', 'orders.events',
    async () => { throw new Error('insufficient stock'); }, { verify: good });
  out.rollback_error = null;
} catch (err) {
  out.rollback_error = err.message;
}

// 2b. a batch: prepare and commit of one message in one request, in order.
out.batch = (await client.batch([
  { type: 'prepare', biz_id: biz, key: `${biz}-batch`, payload: 'batched', headers: { 'ec-topic': 'orders.events', 'ec-fkey': `${biz}-batch` } },
  { type: 'commit', biz_id: biz, key: `${biz}-batch` },
])).results.map((r) => r.type);

// 3. prepared, then the producer "dies": check-back commits (signed, verified).
await client.prepare(biz, `${biz}-checkback`, Buffer.from('checked back'), 'orders.events', { verify: good, checkAfterMs: 100 });
// 4. prepared, check-back endpoint with the wrong secret: refused, stays prepared.
await client.prepare(biz, `${biz}-badsig`, 'never', 'orders.events', { verify: badUrl, checkAfterMs: 100 });

// 5. errors name the field.
try {
  await client.prepare(biz, `${biz}-invalid`, 'x', 'bad topic!');
} catch (err) {
  if (!(err instanceof ApiError)) throw err;
  out.invalid = { status: err.status, field: err.field, message: err.body.error };
}
try {
  await new Client(env.EC_URL, { token: 'not-a-token-0123456789' }).commit(biz, 'x');
} catch (err) {
  out.unauthorized = err.status;
}

// 6. waitSettled: the final state, whatever the message became; a COMMIT
// for a key never prepared settles as an orphan, not as a healthy message.
await client.commit(biz, `${biz}-orphan`);
out.settled = {};
for (const k of ['-commit', '-rollback', '-orphan']) out.settled[k] = await client.waitSettled(biz, biz + k);
out.settled_rule = JSON.parse(env.EC_SETTLED_CASES).map((st) => settled(JSON.parse(st)));

// Wait for the center (404 until ingest has stored the message).
const want = {
  [`${biz}-commit`]: ['COMMITTED', 'SENT'], [`${biz}-rollback`]: ['ROLLED_BACK', undefined],
  [`${biz}-checkback`]: ['COMMITTED', 'SENT'], [`${biz}-batch`]: ['COMMITTED', 'SENT'],
};
const deadline = Date.now() + 60000;
let states = {};
while (Date.now() < deadline) {
  states = {};
  for (const k of [...Object.keys(want), `${biz}-badsig`]) {
    try {
      states[k] = await client.state(biz, k);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
      states[k] = { status: null, verify_attempts: 0 }; // not stored by ingest yet
    }
  }
  const done = Object.entries(want).every(([k, [s, ss]]) => states[k].status === s && states[k].send_status === ss);
  if (done && states[`${biz}-badsig`].verify_attempts >= 1 && calls.good >= 1) break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
out.states = Object.fromEntries(Object.entries(states).map(([k, s]) =>
  [k, { status: s.status, send_status: s.send_status ?? null, verify_attempts: s.verify_attempts }]));
out.calls = calls;
for (const srv of servers) srv.close();
console.log(JSON.stringify(out));
