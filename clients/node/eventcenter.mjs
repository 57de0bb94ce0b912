// eventcenter producer client: transactional messages over HTTP.
//
// No dependencies (Node 18+, global fetch). Talks to the center's producer
// API (ingress.listen): PREPARE, run the local transaction, then COMMIT or
// ROLLBACK; each call resolves once the broker acknowledged the envelope.
// Also verifies the center's check-back signatures (EC-Signature v2) for a
// check-back endpoint served with node:http (see checkbackHandler).
//
//   const client = new Client('http://127.0.0.1:8081', { token: '...' });
//   await client.transact('orders', orderId, JSON.stringify(order), 'orders.events',
//     async () => saveOrder(order), { verify: 'http://10.0.0.5:8090/checkback' });
//   await client.waitSettled('orders', orderId); // {status: 'COMMITTED', send_status: 'SENT', ...}
//
// A key names one message, once: a later PREPARE or COMMIT of the same key
// changes nothing (a COMMIT after a ROLLBACK is a conflict, ignored).

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

// Check-back answers (TrustMessage's messageStatus values).
export const COMMIT = 2;
export const ROLLBACK = 3;
export const UNKNOWN = 1;

// ApiError is an answer other than 2xx: status, the field it names and why.
export class ApiError extends Error {
  constructor(status, message, field, retryAfter, body) {
    super(`HTTP ${status}: ${message}`);
    this.name = 'ApiError';
    this.status = status;
    this.field = field;
    this.retryAfter = retryAfter;
    this.body = body;
  }
}

// CommitUnsent: the local transaction committed but its COMMIT was not
// acknowledged. The message is not lost: the center checks the producer
// back (the verify endpoint) and then forwards it.
export class CommitUnsent extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'CommitUnsent';
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// orderParams: the commit/rollback parameter that reaches an ordered
// PREPARE's partition.
const orderParams = (orderKey) => (orderKey ? [['ec-order-key', orderKey]] : undefined);

// settled tells whether a state from Client.state is final for a
// producer: forwarded (COMMITTED, send_status SENT), given up (DEAD),
// ROLLED_BACK, CANCELLED, VERIFY_FAILED, or an orphan COMMIT (a COMMIT
// whose PREPARE never came: orphan true).
export function settled(st) {
  const status = st?.status;
  if (st?.orphan || ['ROLLED_BACK', 'CANCELLED', 'VERIFY_FAILED'].includes(status)) return true;
  return status === 'COMMITTED' && ['SENT', 'DEAD'].includes(st?.send_status);
}

export class Client {
  // baseUrl: the producer API, e.g. 'http://127.0.0.1:8081'.
  // token: a producer token (ingress.tokens), or undefined in dev.
  // retries: how many times a 503 or 429 answer (or a network error) is
  // retried, waiting Retry-After (or 1s); a repeated envelope is harmless.
  constructor(baseUrl, { token, timeoutMs = 15000, retries = 3, maxWaitMs = 10000 } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = token;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.maxWaitMs = maxWaitMs;
  }

  // prepare announces a message; resolves to {id, type, topic, partition, offset}.
  // payload: string (UTF-8), Buffer or Uint8Array. headers: forwarded
  // headers {name: value}, sent as ec-h-<name> (names keep their case).
  // orderKey: messages of bizId with one order key are forwarded in commit
  // order; pass it again to commit or rollback.
  prepare(bizId, key, payload, topic, { fkey, target, tag, verify, checkAfterMs, headers, orderKey } = {}) {
    const params = [['ec-topic', topic]];
    for (const [name, value] of [['ec-fkey', fkey], ['ec-target', target], ['ec-tag', tag], ['ec-verify', verify], ['ec-order-key', orderKey]]) {
      if (value !== undefined && value !== null) params.push([name, value]);
    }
    if (checkAfterMs !== undefined && checkAfterMs !== null) params.push(['ec-check-after', String(Math.trunc(checkAfterMs))]);
    for (const [name, value] of Object.entries(headers ?? {})) params.push(['ec-h-' + name, value]);
    return this.#call('POST', Client.#path(bizId, key, 'prepare'), params, payload ?? '');
  }

  // commit and rollback take the order key the message was prepared with.
  commit(bizId, key, { orderKey } = {}) {
    return this.#call('POST', Client.#path(bizId, key, 'commit'), orderParams(orderKey));
  }

  rollback(bizId, key, { orderKey } = {}) {
    return this.#call('POST', Client.#path(bizId, key, 'rollback'), orderParams(orderKey));
  }

  // state resolves to the message's state {status, send_status, ...};
  // ApiError 404 if the center does not know it.
  state(bizId, key) {
    return this.#call('GET', Client.#path(bizId, key));
  }

  // waitSettled polls state until the message settled (see settled) and
  // resolves to that state. A message not stored yet (404), PREPARED, or
  // committed and waiting to be sent is polled again; after timeoutMs it
  // resolves to the last state read ({status: null} if there was none).
  async waitSettled(bizId, key, { timeoutMs = 30000, intervalMs = 200 } = {}) {
    const deadline = Date.now() + timeoutMs;
    let last = { biz_id: bizId, key, status: null };
    for (;;) {
      try {
        last = await this.state(bizId, key);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 404) throw err;
      }
      if (settled(last) || Date.now() >= deadline) return last;
      await sleep(intervalMs);
    }
  }

  // batch sends several envelopes: {type, biz_id, key, payload or
  // payload_base64, headers: {'ec-topic': ...}}.
  batch(envelopes) {
    return this.#call('POST', '/v1/batch', null, JSON.stringify({ envelopes }), 'application/json');
  }

  // transact: PREPARE, await localTx(), then COMMIT (or ROLLBACK if it
  // threw, and rethrow). Resolves to localTx's result. If the COMMIT cannot
  // be sent it rejects with CommitUnsent: the local transaction did commit
  // and check-back will settle the message, so give opts.verify.
  async transact(bizId, key, payload, topic, localTx, opts = {}) {
    await this.prepare(bizId, key, payload, topic, opts);
    let result;
    try {
      result = await localTx();
    } catch (err) {
      try {
        await this.rollback(bizId, key, { orderKey: opts.orderKey });
      } catch {
        // check-back answers rollback later
      }
      throw err;
    }
    try {
      await this.commit(bizId, key, { orderKey: opts.orderKey });
    } catch (err) {
      throw new CommitUnsent(`${bizId}:${key} committed locally, commit not sent: ${err.message}`, err);
    }
    return result;
  }

  static #path(bizId, key, action) {
    const p = `/v1/messages/${encodeURIComponent(bizId)}/${encodeURIComponent(key)}`;
    return action ? `${p}/${action}` : p;
  }

  async #call(method, path, params, body, contentType = 'application/octet-stream') {
    let url = this.baseUrl + path;
    if (params && params.length) {
      url += '?' + params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
    }
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (method === 'POST') headers['Content-Type'] = contentType;
    for (let attempt = 0; ; attempt++) {
      let wait = 1000;
      try {
        const res = await fetch(url, {
          method, headers, body: method === 'POST' ? (body ?? '') : undefined,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        const text = await res.text();
        let doc;
        try {
          doc = text ? JSON.parse(text) : null;
        } catch {
          doc = { error: text };
        }
        if (res.ok) return doc;
        const ra = res.headers.get('Retry-After');
        const err = new ApiError(res.status, doc?.error ?? '', doc?.field, ra ? Number(ra) : undefined, doc);
        if (![429, 503].includes(res.status) || attempt >= this.retries || (res.status === 429 && !ra)) throw err;
        if (ra) wait = Number(ra) * 1000;
      } catch (err) {
        if (err instanceof ApiError || attempt >= this.retries) throw err;
      }
      await sleep(Math.min(wait, this.maxWaitMs));
    }
  }
}

// -- check-back ---------------------------------------------------------------

export class SignatureError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SignatureError';
  }
}

// canonicalV2 is the string a v2 signature is the HMAC-SHA256 of (see the
// docs/checkback.md).
export function canonicalV2(t, method, host, target, body, triVersion = '', triGroup = '') {
  host = host.toLowerCase();
  for (const suffix of [':80', ':443']) {
    if (host.endsWith(suffix)) {
      host = host.slice(0, -suffix.length);
      break;
    }
  }
  const fields = ['v2', String(t), method, host, target, triVersion, triGroup,
    createHash('sha256').update(body ?? '').digest('hex')];
  if (fields.some((f) => /[\r\n]/.test(f))) throw new SignatureError('a signed field holds CR or LF');
  return fields.join('\n');
}

// verifySignature checks an EC-Signature header (v2) against the request as
// received: target is the request target as sent (req.url), host the Host
// header, body a Buffer or string. secrets: the accepted secrets (several
// while rotating). Returns the matching signature (hex, a replay-cache key)
// or throws SignatureError.
export function verifySignature(header, { method, host, target, body = '', triVersion = '', triGroup = '' }, secrets,
  { nowSeconds = Date.now() / 1000, maxAge = 300, maxFuture = 30 } = {}) {
  if (!header) throw new SignatureError('missing EC-Signature');
  let ts;
  const macs = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) throw new SignatureError('bad EC-Signature');
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't') {
      if (ts !== undefined) throw new SignatureError('bad EC-Signature');
      ts = v;
    } else if (k === 'v2') {
      macs.push(v.toLowerCase());
    }
  }
  if (ts === undefined || !/^-?\d+$/.test(ts)) throw new SignatureError('bad EC-Signature');
  if (macs.length === 0) throw new SignatureError('EC-Signature has no v2 signature');
  const t = Number(ts);
  if (nowSeconds - t > maxAge || t - nowSeconds > maxFuture) {
    throw new SignatureError('EC-Signature timestamp outside the allowed window');
  }
  const canonical = canonicalV2(t, method, host, target, body, triVersion, triGroup);
  for (const secret of secrets) {
    const want = createHmac('sha256', secret).update(canonical).digest();
    for (const m of macs) {
      if (!/^[0-9a-f]{64}$/.test(m)) continue;
      if (timingSafeEqual(Buffer.from(m, 'hex'), want)) return m;
    }
  }
  throw new SignatureError('bad EC-Signature');
}

// checkbackHandler returns a node:http request listener answering the
// center's HTTP check-back. decide(bizId, key) returns (or resolves to)
// COMMIT, ROLLBACK or UNKNOWN (or 'commit', 'rollback', 'unknown'). With
// secrets, every request must carry a valid v2 EC-Signature signed with one
// of them, not seen before; otherwise it is answered 401 (the center reads
// that as unknown and asks again later).
//
//   http.createServer(checkbackHandler(decide, { secrets: [secret] })).listen(8090);
export function checkbackHandler(decide, { secrets = [], maxAge = 300, maxFuture = 30, replayCacheSize = 100000 } = {}) {
  const seen = new Map(); // signature -> expiry (seconds)
  const named = { commit: COMMIT, rollback: ROLLBACK, unknown: UNKNOWN };
  const answer = (res, code, doc) => {
    const body = JSON.stringify(doc);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  const firstUse = (mac, now) => {
    if ((seen.get(mac) ?? 0) >= now) return false;
    if (seen.size >= replayCacheSize) {
      for (const [k, exp] of seen) if (exp < now) seen.delete(k);
      while (seen.size >= replayCacheSize) {
        let oldest;
        for (const [k, exp] of seen) if (oldest === undefined || exp < seen.get(oldest)) oldest = k;
        seen.delete(oldest);
      }
    }
    seen.set(mac, now + maxAge + maxFuture);
    return true;
  };
  // A refusal closes the connection: the body it did not read is never
  // taken for the next request.
  const refuse = (res, code, error, headers = {}) => {
    res.setHeader('Connection', 'close');
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    answer(res, code, { status: 'FAIL', error });
  };
  return (req, res) => {
    // The method and the framing are checked before anything is read: a
    // check-back is a GET without a body, so no body is ever buffered.
    if (req.method !== 'GET') return refuse(res, 405, 'want GET', { Allow: 'GET' });
    if ((req.headers['content-length'] ?? '0') !== '0' || req.headers['transfer-encoding'] !== undefined) {
      return refuse(res, 400, 'a GET carries no body');
    }
    let size = 0;
    req.on('data', (c) => { size += c.length; }); // nothing, by the framing: counted, not kept
    req.on('end', async () => {
      try {
        if (size > 0) return refuse(res, 400, 'a GET carries no body');
        const body = Buffer.alloc(0);
        if (secrets.length) {
          const now = Date.now() / 1000;
          let mac;
          try {
            mac = verifySignature(req.headers['ec-signature'] ?? '',
              { method: req.method, host: req.headers.host ?? '', target: req.url, body }, secrets,
              { nowSeconds: now, maxAge, maxFuture });
          } catch (err) {
            return answer(res, 401, { status: 'FAIL', error: err.message });
          }
          if (!firstUse(mac, now)) return answer(res, 401, { status: 'FAIL', error: 'EC-Signature replayed' });
        }
        const q = new URL(req.url, 'http://x').searchParams;
        const bizId = q.get('bizID');
        const key = q.get('messageKey');
        if (!bizId || !key) return answer(res, 400, { status: 'FAIL', error: 'bizID and messageKey are required' });
        let decision = await decide(bizId, key);
        decision = named[decision] ?? decision;
        if (![COMMIT, ROLLBACK, UNKNOWN].includes(decision)) decision = UNKNOWN;
        answer(res, 200, { status: 'SUCCESS', data: { messageKey: key, messageStatus: decision } });
      } catch (err) {
        answer(res, 500, { status: 'FAIL', error: String(err?.message ?? err) });
      }
    });
  };
}
