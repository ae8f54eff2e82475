/**
 * Dispatch benchmarks (issue #3):
 *
 * 1. Local dispatch of one event through 10 handler hooks: ns per hook (warm-up, many
 *    iterations per sample, median of 5 samples). Target ≤ 2 µs per hook.
 * 2. Decision round trip: `evaluateToolCall` against a local 127.0.0.1 receiver answering
 *    `{"decision":"allow"}`, versus a bare undici `request` (keep-alive Agent) POSTing the same
 *    JSON body to the same receiver and parsing the JSON answer. Both run interleaved call by call
 *    in the same process; per round the ratio of the per-call medians; median of 5 rounds.
 *    Target ≤ 1.2. Both sides run the compiled package (dist/).
 *
 * `runDispatchBench()` is called by `bench/run.ts`; `npx tsx bench/dispatch.ts` runs it alone.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
// As shipped: the compiled package (dist/, built by `npm install`), not the sources under tsx.
import { HookDispatcher, silentLogger } from '../dist/entry/index.js';
import type { ToolCallHookContext } from '../src/contract/toolContext.ts';
import type { AgentHook } from '../src/contract/hook.ts';

const SAMPLES = 5;
const HANDLER_HOOKS = 10;
const DISPATCH_ITERATIONS = 20_000;
const DISPATCH_WARMUP = 5_000;
const ROUND_TRIPS_PER_ROUND = 1_000;
const ROUND_TRIP_WARMUP = 500;

export const TARGET_NS_PER_HOOK = 2_000;
export const TARGET_ROUND_TRIP_RATIO = 1.2;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function benchLocalDispatch(): Promise<{ nsPerHook: number; samples: number[] }> {
  const d = new HookDispatcher({ env: {}, logger: silentLogger() });
  let sink = 0;
  const hooks: AgentHook[] = Array.from({ length: HANDLER_HOOKS }, (_, i) => ({
    id: `h${i}`,
    type: 'afterStep',
    handler: (event) => {
      sink += typeof event.stepIndex === 'number' ? 1 : 0;
    },
  }));
  d.register('bench-op', hooks);
  const event = { operationId: 'bench-op', stepIndex: 3, content: 'step output', usage: { totalTokens: 120 } };
  for (let i = 0; i < DISPATCH_WARMUP; i++) await d.dispatch('bench-op', 'afterStep', event);
  const samples: number[] = [];
  for (let s = 0; s < SAMPLES; s++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < DISPATCH_ITERATIONS; i++) await d.dispatch('bench-op', 'afterStep', event);
    const ns = Number(process.hrtime.bigint() - started);
    samples.push(ns / (DISPATCH_ITERATIONS * HANDLER_HOOKS));
  }
  await d.close();
  if (sink !== (DISPATCH_WARMUP + SAMPLES * DISPATCH_ITERATIONS) * HANDLER_HOOKS) throw new Error('handlers did not all run');
  return { nsPerHook: median(samples), samples };
}

async function startAllowReceiver(): Promise<{ url: string; close: () => Promise<void> }> {
  const answer = Buffer.from('{"decision":"allow"}');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
      res.end(answer);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function benchRoundTrip(): Promise<{ hookUs: number; bareUs: number; ratio: number; ratios: number[] }> {
  const receiver = await startAllowReceiver();
  const d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32', logger: silentLogger() });
  d.register('bench-rt', [{ id: 'policy', type: 'beforeToolCall', webhook: { url: `${receiver.url}/decide`, responseHandling: 'toolCall', timeout: 5 } }]);
  const context: ToolCallHookContext = {
    toolCallId: 'call_bench',
    assistantMessageId: 'msg_bench',
    identifier: 'web-browsing',
    apiName: 'search',
    args: { query: 'hookrelay benchmark', limit: 10 },
    callIndex: 0,
    stepIndex: 1,
    operationId: 'bench-rt',
    executor: 'server',
    userId: 'user_bench',
  };
  // The baseline sends the same bytes the hook sends (context + hookId/hookType) and reads the answer.
  const body = JSON.stringify({ ...context, hookId: 'policy', hookType: 'beforeToolCall' });
  const agent = new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 60_000, connections: 64, pipelining: 1 });
  const origin = receiver.url;

  const hookOnce = async () => {
    const outcome = await d.evaluateToolCall('bench-rt', context);
    if (outcome.status !== 'allow') throw new Error(`unexpected outcome ${outcome.status}`);
  };
  const bareOnce = async () => {
    const res = await request(`${origin}/decide`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body,
    });
    const json = (await res.body.json()) as { decision?: unknown };
    if (res.statusCode !== 200 || json.decision !== 'allow') throw new Error('unexpected bare answer');
  };

  for (let i = 0; i < ROUND_TRIP_WARMUP; i++) {
    await hookOnce();
    await bareOnce();
  }
  // Per-call latencies, the two sides alternating call by call (which goes first alternates
  // too), so machine noise hits both alike; each round compares the medians.
  const ratios: number[] = [];
  const hookSamples: number[] = [];
  const bareSamples: number[] = [];
  const hookLat = new Float64Array(ROUND_TRIPS_PER_ROUND);
  const bareLat = new Float64Array(ROUND_TRIPS_PER_ROUND);
  const timed = async (fn: () => Promise<void>): Promise<number> => {
    const started = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - started);
  };
  for (let s = 0; s < SAMPLES; s++) {
    for (let i = 0; i < ROUND_TRIPS_PER_ROUND; i++) {
      if (i % 2 === 0) {
        hookLat[i] = await timed(hookOnce);
        bareLat[i] = await timed(bareOnce);
      } else {
        bareLat[i] = await timed(bareOnce);
        hookLat[i] = await timed(hookOnce);
      }
    }
    const hookMedian = median([...hookLat]);
    const bareMedian = median([...bareLat]);
    hookSamples.push(hookMedian / 1_000);
    bareSamples.push(bareMedian / 1_000);
    ratios.push(hookMedian / bareMedian);
  }
  await d.close();
  await agent.close();
  await receiver.close();
  return { hookUs: median(hookSamples), bareUs: median(bareSamples), ratio: median(ratios), ratios };
}

export async function runDispatchBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const local = await benchLocalDispatch();
  const rt = await benchRoundTrip();
  const verdict = (ok: boolean) => (ok ? 'ok' : 'MISSED');
  const rows: string[][] = [
    ['benchmark', 'result', 'target', 'status'],
    [
      `local dispatch, ${HANDLER_HOOKS} handler hooks (ns/hook, median of ${SAMPLES})`,
      local.nsPerHook.toFixed(0),
      `≤ ${TARGET_NS_PER_HOOK}`,
      verdict(local.nsPerHook <= TARGET_NS_PER_HOOK),
    ],
    ['decision round trip: evaluateToolCall (µs/call, median)', rt.hookUs.toFixed(1), '', ''],
    ['decision round trip: bare undici request (µs/call, median)', rt.bareUs.toFixed(1), '', ''],
    [`decision round trip ratio (median of ${SAMPLES})`, rt.ratio.toFixed(3), `≤ ${TARGET_ROUND_TRIP_RATIO}`, verdict(rt.ratio <= TARGET_ROUND_TRIP_RATIO)],
  ];
  return {
    rows,
    summary: {
      dispatchNsPerHook: local.nsPerHook,
      decisionRoundTripUs: rt.hookUs,
      bareRequestUs: rt.bareUs,
      decisionRoundTripRatio: rt.ratio,
    },
  };
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' | ')} |`;
  console.log(line(rows[0]!));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows.slice(1)) console.log(line(r));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { rows, summary } = await runDispatchBench();
  printTable(rows);
  console.log(JSON.stringify(summary));
}
