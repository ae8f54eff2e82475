/**
 * Q10: what `hookrelay replay` does once its flags are checked — pick candidates (ids or a
 * filter), confirm, claim each row `failed → queued` with a new generation, add the jobs — loaded
 * only when the command runs (BullMQ, pg and drizzle stay out of `hookrelay --help`).
 */
import { createInterface } from 'node:readline/promises';
import cliProgress from 'cli-progress';
import { addDeliveryJobs } from '../queue/jobs.ts';
import { getDeliveryRow, listDeliveries } from '../store/deliveriesRepo.ts';
import { claimForReplay, replayableStatuses } from '../store/replayRepo.ts';
import type { CliContext } from './context.ts';
import { toFilter } from './deliveriesCommand.ts';
import { CONFIRM_ABOVE, type ReplayFlags } from './replayFlags.ts';
import { CliUsageError } from './errors.ts';
import { EXIT } from './exitCodes.ts';
import { formatTable, iso, printJson } from './output.ts';

const BATCH = 100;
const PAGE = 1_000;

type Skip = { id: string; reason: string };

/** The candidates of a replay by id: unknown ids and rows not replayable are reported, not fatal. */
async function byIds(ctx: CliContext, ids: string[], includeAccepted: boolean) {
  const candidates: string[] = [];
  const skipped: Skip[] = [];
  const unknown: string[] = [];
  const allowed = replayableStatuses(includeAccepted);
  for (const id of [...new Set(ids)]) {
    const row = await getDeliveryRow(ctx.store.db, id);
    if (!row) unknown.push(id);
    else if (row.status === 'delivered') skipped.push({ id, reason: 'already delivered' });
    else if (!allowed.includes(row.status)) {
      skipped.push({
        id,
        reason: row.status === 'accepted_by_qstash' ? 'accepted by QStash (add --include-accepted)' : `status ${row.status} is not replayable`,
      });
    } else candidates.push(id);
  }
  return { candidates, skipped, unknown };
}

/** Every matching id, newest first, paged by keyset so a huge ledger is not read at once. */
async function byFilter(ctx: CliContext, flags: ReplayFlags): Promise<string[]> {
  const filter = toFilter(flags);
  const status = typeof filter.status === 'string' ? filter.status : 'failed';
  const allowed = replayableStatuses(flags.includeAccepted === true);
  if (!allowed.includes(status)) {
    throw new CliUsageError(
      `only failed and held deliveries${flags.includeAccepted ? ' and accepted_by_qstash ones' : ''} can be replayed (got --status ${status})`,
    );
  }
  const ids: string[] = [];
  let beforeId: string | undefined;
  for (;;) {
    const page = await listDeliveries(ctx.store.db, { ...filter, status, limit: PAGE, ...(beforeId ? { beforeId } : {}) });
    ids.push(...page.map((d) => d.id));
    if (page.length < PAGE) return ids;
    beforeId = page.at(-1)!.id;
  }
}

async function confirm(count: number): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`Replay ${count} deliveries? [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One line of `replay --json`'s `results`. */
type ReplayResult =
  | { id: string; result: 'replayed' | 'not_queued'; generation: number }
  | { id: string; result: 'would_replay'; status: string; hookId: string; eventType: string }
  | { id: string; result: 'skipped'; reason: string }
  | { id: string; result: 'unknown' };

/** `replay --json` prints exactly this one object: the summary and every id's result. */
type ReplayReport = { dryRun: boolean; replayed: number; wouldReplay: number; skipped: number; failed: number; results: ReplayResult[] };

export async function runReplay(ctx: CliContext, ids: string[], flags: ReplayFlags): Promise<number> {
  const byId = ids.length > 0;
  const { candidates, skipped, unknown } = byId
    ? await byIds(ctx, ids, flags.includeAccepted === true)
    : { candidates: await byFilter(ctx, flags), skipped: [], unknown: [] };
  const results: ReplayResult[] = [
    ...unknown.map((id) => ({ id, result: 'unknown' as const })),
    ...skipped.map((s) => ({ id: s.id, result: 'skipped' as const, reason: s.reason })),
  ];
  const summary = { dryRun: flags.dryRun === true, replayed: 0, wouldReplay: 0, skipped: skipped.length, failed: unknown.length };
  for (const id of unknown) process.stderr.write(`${id}: unknown delivery id\n`);

  if (candidates.length === 0) {
    if (flags.json) printJson({ ...summary, results } satisfies ReplayReport);
    if (!flags.json) {
      for (const s of skipped) process.stdout.write(`${s.id}: skipped (${s.reason})\n`);
      if (skipped.length > 0) process.stdout.write(`replayed 0, skipped ${skipped.length}, failed ${unknown.length}\n`);
      else if (!byId) process.stdout.write('nothing to replay: no deliveries match\n');
    }
    // A filter matching nothing is a healthy system (exit 0); explicit ids that are all unknown are bad usage.
    if (unknown.length === 0) return EXIT.ok;
    return skipped.length > 0 ? EXIT.partial : EXIT.usage;
  }

  if (flags.dryRun) {
    const rows = await Promise.all(candidates.map((id) => getDeliveryRow(ctx.store.db, id)));
    const present = rows.filter((r): r is NonNullable<typeof r> => r !== undefined);
    results.push(...present.map((r) => ({ id: r.id, result: 'would_replay' as const, status: r.status, hookId: r.hookId, eventType: r.eventType })));
    if (flags.json) printJson({ ...summary, wouldReplay: present.length, results } satisfies ReplayReport);
    if (!flags.json) {
      for (const s of skipped) process.stdout.write(`${s.id}: skipped (${s.reason})\n`);
      process.stdout.write(
        formatTable(
          ['ID', 'STATUS', 'EVENT', 'HOOK', 'LAST ERROR', 'CREATED'],
          present.map((r) => [r.id, r.status, r.eventType, r.hookId, r.lastErrorClass ?? '-', iso(r.createdAt)]),
        ),
      );
      process.stdout.write(`dry run: would replay ${present.length}, skipped ${skipped.length}; nothing changed\n`);
    }
    return unknown.length > 0 ? EXIT.partial : EXIT.ok;
  }

  if (candidates.length > CONFIRM_ABOVE && !flags.yes) {
    // Nobody can answer a prompt from cron or a pipe: refuse instead of proceeding unasked.
    if (!process.stdin.isTTY) {
      process.stderr.write(
        `hookrelay: replaying ${candidates.length} deliveries (more than ${CONFIRM_ABOVE}) needs --yes when stdin is not a terminal; nothing changed\n`,
      );
      return EXIT.usage;
    }
    if (!(await confirm(candidates.length))) {
      process.stderr.write('hookrelay: replay cancelled; nothing changed\n');
      return EXIT.usage;
    }
  }
  if (!flags.json) for (const s of skipped) process.stdout.write(`${s.id}: skipped (${s.reason})\n`);

  const queue = ctx.queue();
  const bar =
    process.stderr.isTTY && !flags.json
      ? new cliProgress.SingleBar({ format: 'replay [{bar}] {value}/{total} {eta_formatted} left', hideCursor: true }, cliProgress.Presets.shades_classic)
      : undefined;
  bar?.start(candidates.length, 0);
  const batchSize = Math.min(BATCH, flags.rate ?? BATCH);
  for (let i = 0; i < candidates.length; i += batchSize) {
    const started = Date.now();
    const batch = candidates.slice(i, i + batchSize);
    const claimed = await claimForReplay(ctx.store.db, batch, flags.includeAccepted === true);
    const taken = new Set(claimed.map((c) => c.id));
    for (const id of batch) {
      if (taken.has(id)) continue;
      summary.skipped += 1;
      results.push({ id, result: 'skipped', reason: 'delivered or replayed since it was selected' });
    }
    try {
      await addDeliveryJobs(
        queue,
        claimed.map((c) => ({ deliveryId: c.id, generation: c.generation })),
      );
      summary.replayed += claimed.length;
      results.push(...claimed.map((c) => ({ id: c.id, result: 'replayed' as const, generation: c.generation })));
    } catch {
      // The rows are queued in the ledger: the worker's reconciler adds their jobs (Q2).
      summary.failed += claimed.length;
      results.push(...claimed.map((c) => ({ id: c.id, result: 'not_queued' as const, generation: c.generation })));
      process.stderr.write(
        `${claimed.length} deliveries could not be added to the queue (Redis?); they are queued in the ledger and the worker's reconciler will enqueue them\n`,
      );
    }
    bar?.update(Math.min(candidates.length, i + batch.length));
    if (flags.rate) {
      const wait = (batch.length / flags.rate) * 1000 - (Date.now() - started);
      if (wait > 0) await sleep(wait);
    }
  }
  bar?.stop();
  if (flags.json) printJson({ ...summary, results } satisfies ReplayReport);
  if (!flags.json) process.stdout.write(`replayed ${summary.replayed}, skipped ${summary.skipped}, failed ${summary.failed}\n`);
  return summary.failed > 0 ? EXIT.partial : EXIT.ok;
}
