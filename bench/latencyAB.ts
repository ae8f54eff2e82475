/**
 * enqueue→received latency at one offered rate with endpoint isolation on and off, interleaved
 * (`RATE=500 ROUNDS=2 npx tsx bench/latencyAB.ts`): what the gate's round trip adds per event.
 */
import { runLatency } from './product.ts';
import { startReceiverProcess } from './support.ts';

const rate = Number(process.env.RATE ?? 500);
const rounds = Number(process.env.ROUNDS ?? 2);
const receiver = await startReceiverProcess();
try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const [label, env] of [
      ['on', {}],
      ['off', { HOOKRELAY_ENDPOINT_ISOLATION: 'false' }],
    ] as const) {
      const r = await runLatency({ ratePerSecond: rate, seconds: 10, receiverUrl: receiver.url, stats: receiver.stats, reset: receiver.reset, env });
      console.log(`round ${round} isolation ${label}: p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${r.count}/${r.offered})`);
    }
  }
} finally {
  receiver.close();
}
