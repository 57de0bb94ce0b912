// Send one transactional message over the producer API:
//
//   node examples/producer.mjs http://127.0.0.1:8081 [token]
//
// With `eventcenter dev` running (its producer API is on 127.0.0.1:8081).
import { Client } from '../eventcenter.mjs';

const client = new Client(process.argv[2] ?? 'http://127.0.0.1:8081', { token: process.argv[3] });
await client.transact('orders', 'order-42', JSON.stringify({ id: 42, total: '9.90' }), 'orders.events',
  async () => console.log('local transaction: order 42 saved'), // your database transaction
  { fkey: 'order-42', verify: 'http://127.0.0.1:8090/checkback' });
console.log(await client.state('orders', 'order-42'));
