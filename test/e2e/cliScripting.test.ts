/**
 * The CLI as scripts use it: output through pipes and slow readers (E-cli pipe), pure `--json`,
 * `--version`, empty results, the --yes rule without a TTY (E-cli json), and one vocabulary for
 * attempts in the library and the CLI. The real bin, against real Postgres, Redis, a receiver and
 * an in-process worker (`startDeliveryWorker`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { insertDeliveries, newDeliveryId, type NewDelivery } from '../../src/store/deliveriesRepo.ts';
import { startDeliveryWorker, type RunningDeliveryWorker } from '../../src/worker/startDeliveryWorker.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT } from '../support/hookrelayProcess.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { waitFor } from '../integration/queue/harness.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const PIPE_ROWS = 2_500;
const FAILED_ROWS = 150;
const PIPE_RUNS = 12;

type Run = { code: number | null; stdout: string; stderr: string };

describe('E-cli: the CLI in scripts and pipes', () => {
  let t: TestStore;
  let rx: Receiver;
  let producer: HookProducer;
  let worker: RunningDeliveryWorker;
  const queueName = `cli-script-${randomBytes(4).toString('hex')}`;
  let failedIds: string[] = [];
  let flakyFailuresLeft = Number.POSITIVE_INFINITY;

  const env = (): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    HOOKRELAY_QUEUE: queueName,
    HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
    HOOKRELAY_HTTP_PORT: '0',
    HOOKRELAY_RETRY_SCHEDULE: '0.05,0.1',
    HOOKRELAY_RECONCILE_INTERVAL_MS: '500',
    LOG_LEVEL: 'silent',
  });
  const collect = (child: ReturnType<typeof spawn>): Promise<Run> =>
    new Promise((resolve) => {
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (d: Buffer) => (stdout += d));
      child.stderr?.on('data', (d: Buffer) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  /** The bin with stdin not a terminal (as in cron or CI). */
  const cli = (args: string[]): Promise<Run> => collect(spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] }));
  /** The bin writing into a pipe whose reader starts reading only after 0.3 s; the exit code is the bin's. */
  const throughSlowReader = (args: string[]): Promise<Run> =>
    collect(
      spawn('bash', ['-c', `"${process.execPath}" "${BIN}" ${args.join(' ')} | (sleep 0.3; cat); exit \${PIPESTATUS[0]}`], {
        cwd: ROOT,
        env: env(),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
  const ledger = async (where: string, params: unknown[] = []) =>
    (
      await t.store.pool!.query<{ id: string; status: string; generation: number; attempt_count: number }>(
        `SELECT id, status, generation, attempt_count FROM deliveries WHERE ${where} ORDER BY id`,
        params,
      )
    ).rows;

  beforeAll(async () => {
    t = await createTestStore('cli_script');
    rx = await startReceiver((req) => {
      if (req.path === '/flaky' && flakyFailuresLeft > 0) {
        flakyFailuresLeft -= 1;
        return { status: 503 };
      }
      return { status: 204 };
    });
    const row = (hookId: string, i: number): NewDelivery => ({
      id: newDeliveryId(),
      operationId: `op-${hookId}-${i}`,
      eventType: 'onComplete',
      hookId,
      hook: { id: hookId, type: 'onComplete', webhook: { url: `${rx.url}/ok` } },
      transport: 'fetch',
      payload: { operationId: `op-${hookId}-${i}`, reason: 'done', note: 'x'.repeat(200) },
      occurredAt: new Date(),
    });
    const delivered = Array.from({ length: PIPE_ROWS }, (_, i) => row('piped', i));
    for (let i = 0; i < delivered.length; i += 500) await insertDeliveries(t.store.db, delivered.slice(i, i + 500));
    await t.store.pool!.query(`UPDATE deliveries SET status = 'delivered', attempt_count = 1, delivered_at = now() WHERE hook_id = 'piped'`);
    const failed = Array.from({ length: FAILED_ROWS }, (_, i) => row('seeded', i));
    failedIds = await insertDeliveries(t.store.db, failed);
    await t.store.pool!.query(`UPDATE deliveries SET status = 'failed', attempt_count = 3, last_error_class = 'http_error' WHERE hook_id = 'seeded'`);

    producer = createHookProducer({ store: t.store, redisUrl: TEST_REDIS_URL, queueName, env: {} });
    worker = await startDeliveryWorker({ env: env(), logger: silentLogger(), migrate: false });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await producer?.close();
    await rx?.close();
    await deleteKeys(queueKeys(queueName));
    await t?.cleanup();
  }, 60_000);

  it(`E-cli pipe: \`deliveries list --limit 5000 --json\` into a slow reader, ${PIPE_RUNS} runs: every run is complete JSON with every row, exit 0`, async () => {
    const all = (await ledger('true')).map((r) => r.id).reverse(); // newest first, as listed
    expect(all).toHaveLength(PIPE_ROWS + FAILED_ROWS);
    for (let run = 0; run < PIPE_RUNS; run += 1) {
      const out = await throughSlowReader(['deliveries', 'list', '--limit', '5000', '--json']);
      expect({ run, code: out.code, stderr: out.stderr }).toEqual({ run, code: 0, stderr: '' });
      const rows = JSON.parse(out.stdout) as Array<{ id: string }>;
      expect(rows.map((r) => r.id)).toEqual(all);
    }
  }, 240_000);

  it('E-cli pipe: a big replay report ending in exit 1 (2,500 delivered ids skipped, one unknown) keeps every line and its code, into a slow reader and into a file', async () => {
    const delivered = (await ledger(`hook_id = 'piped'`)).map((r) => r.id);
    const unknown = 'dlv_01AAAAAAAAAAAAAAAAAAAAAAAA';
    const args = ['replay', '--json', ...delivered, unknown];
    const check = (stdout: string) => {
      const report = JSON.parse(stdout) as { results: Array<{ id: string; result: string; reason?: string }> };
      expect(report).toMatchObject({ dryRun: false, replayed: 0, skipped: PIPE_ROWS, failed: 1 });
      expect(
        report.results
          .filter((r) => r.result === 'skipped' && r.reason === 'already delivered')
          .map((r) => r.id)
          .sort(),
      ).toEqual(delivered);
      expect(report.results.filter((r) => r.result === 'unknown').map((r) => r.id)).toEqual([unknown]);
    };
    for (let run = 0; run < 3; run += 1) {
      const out = await throughSlowReader(args);
      expect(out.code).toBe(1);
      expect(out.stderr).toBe(`${unknown}: unknown delivery id\n`);
      check(out.stdout);
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'hookrelay-cli-'));
    try {
      const file = path.join(dir, 'out.json');
      const out = await collect(
        spawn('bash', ['-c', `"${process.execPath}" "${BIN}" ${args.join(' ')} > "${file}"`], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] }),
      );
      expect(out.code).toBe(1);
      check(await readFile(file, 'utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('E-cli json: --version and -V print the package version, exit 0', async () => {
    for (const flag of ['--version', '-V']) expect(await cli([flag])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  }, 30_000);

  it('E-cli json: a filter that matches nothing is exit 0 with an empty result; an unknown explicit id stays exit 2 with one line', async () => {
    expect(await cli(['deliveries', 'list', '--operation', 'op-none', '--json'])).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    expect(await cli(['deliveries', 'list', '--operation', 'op-none'])).toEqual({ code: 0, stdout: 'no deliveries match\n', stderr: '' });
    expect(await cli(['records', 'list', '--session', 'sess-none', '--json'])).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    expect(await cli(['replay', '--status', 'failed', '--operation', 'op-none', '--yes'])).toEqual({
      code: 0,
      stdout: 'nothing to replay: no deliveries match\n',
      stderr: '',
    });
    const json = await cli(['replay', '--status', 'failed', '--operation', 'op-none', '--yes', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ dryRun: false, replayed: 0, wouldReplay: 0, skipped: 0, failed: 0, results: [] });

    const unknown = 'dlv_01AAAAAAAAAAAAAAAAAAAAAAAA';
    expect(await cli(['replay', unknown])).toEqual({ code: 2, stdout: '', stderr: `${unknown}: unknown delivery id\n` });
    const unknownJson = await cli(['replay', unknown, '--json']);
    expect(unknownJson.code).toBe(2);
    expect(JSON.parse(unknownJson.stdout)).toMatchObject({ failed: 1, results: [{ id: unknown, result: 'unknown' }] });
    const show = await cli(['deliveries', 'show', unknown, '--json']);
    expect(show).toEqual({ code: 2, stdout: '', stderr: `hookrelay: no delivery with id "${unknown}"\n` });
  }, 60_000);

  it(`E-cli json: without a TTY, a replay of more than 100 needs --yes (exit 2, one line, nothing changed); --dry-run does not`, async () => {
    const before = await ledger(`hook_id = 'seeded'`);
    const refused = await cli(['replay', '--status', 'failed', '--hook', 'seeded']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(`hookrelay: replaying ${FAILED_ROWS} deliveries (more than 100) needs --yes when stdin is not a terminal; nothing changed\n`);
    expect(await ledger(`hook_id = 'seeded'`)).toEqual(before);
    const dry = await cli(['replay', '--status', 'failed', '--hook', 'seeded', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`dry run: would replay ${FAILED_ROWS}, skipped 0; nothing changed`);
    expect(await ledger(`hook_id = 'seeded'`)).toEqual(before);
  }, 60_000);

  it('E-cli json: `replay --json` prints one JSON document with the summary inside, nothing else on stdout; each row is then delivered', async () => {
    const run = await cli(['replay', '--status', 'failed', '--hook', 'seeded', '--yes', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { replayed: number; results: Array<{ id: string; result: string; generation: number }> };
    expect(report).toMatchObject({ dryRun: false, replayed: FAILED_ROWS, skipped: 0, failed: 0 });
    expect(report.results.map((r) => r.id).sort()).toEqual([...failedIds].sort());
    expect(report.results.every((r) => r.result === 'replayed' && r.generation === 1)).toBe(true);
    await waitFor(async () => (await ledger(`hook_id = 'seeded' AND status = 'delivered'`)).length === FAILED_ROWS, 30_000, 'the replayed rows delivered');
  }, 60_000);

  it('E-cli json: one vocabulary — `attempts` is the list, `attemptCount` every attempt across generations, in the library and in `deliveries show/list --json`', async () => {
    const { deliveryIds } = await producer.enqueue({
      operationId: 'op-vocab',
      type: 'onComplete',
      event: { operationId: 'op-vocab' },
      hooks: [{ id: 'flaky', type: 'onComplete', webhook: { url: `${rx.url}/flaky` } }],
    });
    const id = deliveryIds[0]!;
    // Generation 0: three attempts (the schedule allows two retries), all refused.
    await waitFor(async () => (await producer.getDelivery(id))?.status === 'failed', 20_000, 'generation 0 to fail');
    // Generation 1: a fresh budget — two more refusals, then the receiver takes it.
    flakyFailuresLeft = 2;
    const replay = await cli(['replay', id]);
    expect(replay).toEqual({ code: 0, stdout: 'replayed 1, skipped 0, failed 0\n', stderr: '' });
    await waitFor(async () => (await producer.getDelivery(id))?.status === 'delivered', 20_000, 'generation 1 to deliver');

    const d = (await producer.getDelivery(id))!;
    expect(d).toMatchObject({ status: 'delivered', generation: 1, attemptCount: 6 });
    expect(d.attempts.map((a) => [a.attempt, a.generation, a.outcome])).toEqual([
      [1, 0, 'failed'],
      [2, 0, 'failed'],
      [3, 0, 'failed'],
      [4, 1, 'failed'],
      [5, 1, 'failed'],
      [6, 1, 'delivered'],
    ]);

    const show = await cli(['deliveries', 'show', id, '--json']);
    expect(show.code).toBe(0);
    const shown = JSON.parse(show.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ id, attemptCount: 6, generation: 1 });
    expect(shown.attempts).toEqual(JSON.parse(JSON.stringify(d.attempts)));
    expect(shown).not.toHaveProperty('attemptLog');
    const list = await cli(['deliveries', 'list', '--operation', 'op-vocab', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ id, attemptCount: 6, generation: 1 })]);
    const text = await cli(['deliveries', 'list', '--operation', 'op-vocab']);
    expect(text.stdout).toMatch(new RegExp(`${id}\\s+delivered\\s+default\\s+onComplete\\s+flaky\\s+op-vocab\\s+6\\s`));
  }, 60_000);
});
