// Reads the forwarded records with KafkaJS (as a Node.js consumer would,
// no codec packages installed) and prints them as JSON lines:
//
//   node consume.mjs <broker> <topic> <count>
//
// Run by clients/e2e_test.go from a directory where package-lock.json's
// KafkaJS is installed.
import { Kafka, logLevel } from 'kafkajs';

const [broker, topic, countText] = process.argv.slice(2);
const want = Number(countText);
const kafka = new Kafka({ clientId: 'e2e-consumer', brokers: [broker], logLevel: logLevel.ERROR });
const consumer = kafka.consumer({ groupId: `e2e-${process.pid}` });
const records = [];
const timer = setTimeout(async () => {
  console.error(`timed out with ${records.length} of ${want} records`);
  await consumer.disconnect();
  process.exit(2);
}, 60000);
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
await new Promise((resolve, reject) => {
  consumer.run({
    eachMessage: async ({ message }) => {
      const headers = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = v?.toString();
      records.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? null, headers });
      if (records.length >= want) resolve();
    },
  }).catch(reject);
  consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
});
clearTimeout(timer);
await consumer.disconnect();
for (const r of records) console.log(JSON.stringify(r));
