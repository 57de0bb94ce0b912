// A check-back endpoint for the center (node:http, no dependencies):
//
//   EC_SECRET=... node examples/checkback-server.mjs 8090
//
// The center calls GET /checkback?bizID=..&messageKey=..&attempt=.. for a
// PREPARE left undecided; answer from your database whether the local
// transaction committed. With EC_SECRET set (checkback.biz[].secret), every
// call's EC-Signature is verified.
import http from 'node:http';
import { COMMIT, ROLLBACK, checkbackHandler } from '../eventcenter.mjs';

const committedOrders = new Set(['order-42']); // stands for a lookup in your database
const decide = async (bizId, key) => (committedOrders.has(key) ? COMMIT : ROLLBACK);
const secrets = process.env.EC_SECRET ? [process.env.EC_SECRET] : [];
http.createServer(checkbackHandler(decide, { secrets })).listen(Number(process.argv[2] ?? 8090), '127.0.0.1');
