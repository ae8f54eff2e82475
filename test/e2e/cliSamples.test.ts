/**
 * DEP-5b (issue 50): the CLI samples in docs/cli.md and the README are real output. Each sample is
 * a fenced block preceded by `<!-- cli-sample: <args> -->`; this test plays the scenario the
 * samples show — three `onComplete` deliveries of hook `billing` to a receiver that is down, failed
 * after 3 attempts (`HOOKRELAY_RETRY_SCHEDULE=0.5,1`, `HOOKRELAY_BREAKER_FAILURES=10`) by the shipped worker — against real Postgres
 * and Redis, runs each sampled command with the shipped bin, and compares line by line with ids,
 * times, numbers and URLs normalised and column widths ignored. A column renamed in the CLI (the
 * `CAP` that became `LIMIT/CAP`) fails here until the sample is updated.
 *
 *   CLI_SAMPLES_PRINT=1 npx vitest run test/e2e/cliSamples.test.ts   prints the real output
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { type HookrelayProcess, ROOT, runCli, spawnWorker } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

type Sample = { file: string; args: string; lines: string[] };

/** Every `<!-- cli-sample: … -->` block of a page: the command's arguments and its output lines. */
function samplesOf(file: string): Sample[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/<!-- cli-sample: (.+?) -->\n```[a-z]*\n([\s\S]*?)```/g)].map((m) => {
    const [command, ...lines] = m[2]!.replace(/\n$/, '').split('\n');
    expect(command, `${file}: a sample starts with its command`).toBe(`$ hookrelay ${m[1]}`);
    return { file, args: m[1]!, lines };
  });
}

/** A line as cells: ids, times, URLs and numbers replaced by their kind, runs of 2+ spaces as column breaks. */
function normalise(line: string): string[] {
  return line
    .replace(/\b(dlv|apr)_[0-9A-HJKMNP-TV-Z]{26}\b/g, '<$1>')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b/g, '<time>')
    .replace(/https?:\/\/[^\s]+/g, '<url>')
    .replace(/\b\d+(\.\d+)?\b/g, '<n>')
    .trim()
    .split(/\s{2,}/);
}

const samples = [...samplesOf('docs/cli.md'), ...samplesOf('README.md')];
const OPERATIONS = ['op_7f3a', 'op_91c2', 'op_b4e8'];

describe('DEP-5b: the CLI samples in docs/cli.md and the README match real output', () => {
  let t: TestStore;
  let producer: HookProducer;
  let worker: HookrelayProcess;
  let env: Record<string, string>;
  const queueName = `clisamples-${randomBytes(4).toString('hex')}`;
  const outputs = new Map<string, string[]>();

  beforeAll(async () => {
    t = await createTestStore('clisamples');
    // A receiver that is down: a port that was free a moment ago, now closed (network_error).
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    env = {
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queueName,
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.1/32',
      HOOKRELAY_RETRY_SCHEDULE: '0.5,1',
      HOOKRELAY_BREAKER_FAILURES: '10', // 9 attempts in all: every delivery fails by its own schedule, none by the breaker
      HOOKRELAY_HTTP_PORT: '0',
      HOOKRELAY_MIGRATE: 'false',
      LOG_LEVEL: 'warn',
    };
    producer = createHookProducer({ store: t.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
    worker = spawnWorker(env);
    await producer.enqueueMany(
      OPERATIONS.map((operationId) => ({
        operationId,
        type: 'onComplete' as const,
        event: { operationId, reason: 'done' },
        hooks: [{ id: 'billing', type: 'onComplete' as const, webhook: { url: `http://127.0.0.1:${port}/hooks/billing` } }],
      })),
    );
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await t.store.pool!.query<{ n: number }>("select count(*)::int as n from deliveries where status = 'failed'");
      if (r.rows[0]!.n === OPERATIONS.length) break;
      if (Date.now() > deadline) throw new Error('the deliveries did not fail within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    await worker.stop();
    // In the order the pages tell the story: list, endpoints, dry run, replay.
    for (const args of ['deliveries list --status failed', 'endpoints list', 'replay --status failed --dry-run', 'replay --status failed --yes']) {
      const run = await runCli(args.split(' '), env);
      expect(run.code, `${args}: ${run.stderr}`).toBe(0);
      outputs.set(args, run.stdout.replace(/\n$/, '').split('\n'));
      if (process.env.CLI_SAMPLES_PRINT) process.stdout.write(`$ hookrelay ${args}\n${run.stdout}\n`);
    }
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await producer?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  }, 60_000);

  it('DEP-5b: the pages mark their samples (docs/cli.md and the README)', () => {
    expect(samples.filter((s) => s.file === 'docs/cli.md').length).toBeGreaterThanOrEqual(4);
    expect(samples.filter((s) => s.file === 'README.md').length).toBeGreaterThanOrEqual(2);
  });

  it.each(samples.map((s) => [`${s.file}: hookrelay ${s.args}`, s] as const))('DEP-5b: %s', (_, sample) => {
    const real = outputs.get(sample.args);
    expect(real, `no scenario runs \`hookrelay ${sample.args}\``).toBeDefined();
    // Same lines, same cells, in the same order (the sample may show fewer rows of a table: it shows a prefix of the kinds).
    const expected = sample.lines.map(normalise);
    const actual = real!.map(normalise);
    expect(actual[0], 'header / first line').toEqual(expected[0]);
    for (const line of expected) expect(actual, `line ${JSON.stringify(line)}`).toContainEqual(line);
    expect(actual.length, 'row count').toBe(expected.length);
  });
});
