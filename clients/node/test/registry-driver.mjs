// Prepares through the Node client with a registry-addressed check-back
// (run by clients/e2e_test.go). Environment as for the Python registry
// driver: EC_URL, EC_TOKEN, EC_BIZ, EC_VERIFY (prepared as key
// <bizID>-zk), EC_BAD_VERIFY (a JSON list the center must refuse).
// Prints one JSON object.
import { ApiError, Client } from '../eventcenter.mjs';

const env = process.env;
const biz = env.EC_BIZ;
const client = new Client(env.EC_URL, { token: env.EC_TOKEN });
const out = {
  prepared: await client.prepare(biz, `${biz}-zk`, 'through the registry', 'orders.events',
    { verify: env.EC_VERIFY, checkAfterMs: 100 }),
};
const refused = {};
for (const bad of JSON.parse(env.EC_BAD_VERIFY)) {
  try {
    await client.prepare(biz, `${biz}-zk-bad`, 'never', 'orders.events', { verify: bad });
    refused[bad] = { status: 200 };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    refused[bad] = { status: err.status, field: err.field, message: err.message };
  }
}
out.refused = refused;
console.log(JSON.stringify(out));
