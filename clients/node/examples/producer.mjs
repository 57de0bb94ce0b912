// Send one transactional message over the producer API; print where it ended.
//
//   node clients/node/examples/producer.mjs [URL [TOKEN]]
//
// With `eventcenter dev` running (its producer API is on 127.0.0.1:8081,
// the default URL; dev needs no token). Each run sends a message of its own
// (a fresh key), waits until it settled and prints its final state; it
// exits 0 once the message was forwarded, 1 otherwise.
import { Client } from '../eventcenter.mjs';

const client = new Client(process.argv[2] ?? 'http://127.0.0.1:8081', { token: process.argv[3] });
const orderId = `order-${Date.now()}-${process.pid}`; // a fresh key: a key names one message, once
await client.transact('orders', orderId, JSON.stringify({ id: orderId, total: '9.90' }), 'orders.events',
  async () => console.log(`local transaction: ${orderId} saved`), // your local transaction: throw to roll back
  { fkey: orderId, verify: 'http://127.0.0.1:8090/checkback' });
const final = await client.waitSettled('orders', orderId);
console.log(JSON.stringify(final));
if (final.send_status !== 'SENT') {
  console.error(`not forwarded: ${final.note ?? final.status}`);
  process.exitCode = 1;
}
