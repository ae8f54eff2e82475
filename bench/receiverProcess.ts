/**
 * The benchmark receiver, in its own process so its CPU is not counted against (or stolen from)
 * the worker being measured. Answers every POST 200 with an empty body (keep-alive). When a
 * JSON body carries `sentAt` (ms epoch), records receive − sentAt as enqueue→received latency.
 * Parent messages: {cmd:'reset'} | {cmd:'stats'}; it answers {count, latencies}.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
let latencies: number[] = [];
const SENT_AT = /"sentAt":(\d+)/;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    count += 1;
    const match = SENT_AT.exec(Buffer.concat(chunks).toString('utf8'));
    if (match) latencies.push(Date.now() - Number(match[1]));
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
process.on('message', (msg: { cmd: string }) => {
  if (msg.cmd === 'reset') {
    count = 0;
    latencies = [];
    process.send?.({ ok: true });
  } else if (msg.cmd === 'stats') {
    process.send?.({ count, latencies });
  }
});
process.on('disconnect', () => process.exit(0));
