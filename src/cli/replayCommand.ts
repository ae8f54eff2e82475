/**
 * `hookrelay replay` (Q10): its flags, and what it does once they are checked — pick candidates
 * (ids or a filter), confirm, claim each row `failed → queued` with a new generation, add the
 * jobs. The operator modules (BullMQ, pg, drizzle) load only when a replay runs.
 */
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { ReplayStatusError, CliUsageError } from '../contract/errors.ts';
import type { ReplayResult, ReplaySkip } from '../admin/replay.ts';
import type { CliContext } from './context.ts';
import { addFilterOptions, type FilterFlags, toFilter } from './deliveriesCommand.ts';
import { EXIT } from './exitCodes.ts';
import { formatTable, iso, printErrorText, printJson, printText } from './output.ts';

type OperatorReplay = typeof import('../admin/replay.ts');

/** Above this many, a replay needs --yes (or a yes at the TTY prompt). */
const CONFIRM_ABOVE = 100;

export type ReplayFlags = FilterFlags & { includeAccepted?: boolean; dryRun?: boolean; rate?: number; yes?: boolean; json?: boolean };

export function registerReplayCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  addFilterOptions(
    program
      .command('replay')
      .description('re-enqueue failed deliveries with the same delivery id (webhook-id) under a new generation; never re-sends a delivered one')
      .argument('[ids...]', 'delivery ids (dlv_…); or select with --status and the filters'),
  )
    .option('--include-accepted', 'also replay deliveries QStash accepted (accepted_by_qstash)')
    .option('--dry-run', 'print what would be replayed and change nothing')
    .option('--rate <n>', 'at most n deliveries per second', (v) => parsePositiveInt(v, '--rate'))
    .option('--yes', `replay more than ${CONFIRM_ABOVE} without asking (required when stdin is not a terminal)`)
    .option('--json', "one JSON object: the counts and each id's result")
    .addHelpText(
      'after',
      '\nExamples:\n  hookrelay replay dlv_01J9Z3R6Y4V8Q2W7E5T1N0K3M8\n  hookrelay replay --status failed --since 2h --dry-run\n  hookrelay replay --status failed --hook billing --rate 50 --yes\n  hookrelay replay --status failed --yes --json | jq .replayed',
    )
    .action(async (ids: string[], flags: ReplayFlags) => {
      if (ids.length === 0 && flags.status === undefined)
        throw new CliUsageError('give delivery ids, or --status failed with optional filters (see hookrelay replay --help)');
      if (ids.length > 0 && (flags.status || flags.operation || flags.hook || flags.event || flags.since || flags.until)) {
        throw new CliUsageError('give either delivery ids or filters, not both');
      }
      const { withContext } = await import('./context.ts');
      process.exitCode = await withContext((ctx) => runReplay(ctx, ids, flags));
    });
}

/** Every matching id, newest first (the shared selection in admin/replay.ts). */
async function byFilter(ops: OperatorReplay, ctx: CliContext, flags: ReplayFlags): Promise<string[]> {
  try {
    return await ops.replayCandidatesByFilter(ctx.store.db, { ...toFilter(flags), queue: ctx.settings.HOOKRELAY_QUEUE }, flags.includeAccepted === true);
  } catch (err) {
    if (err instanceof ReplayStatusError) {
      const accepted = err.includeAccepted ? ' and accepted_by_qstash ones' : '';
      throw new CliUsageError(`only failed and held deliveries${accepted} can be replayed (got --status ${err.status})`);
    }
    throw err;
  }
}

/** The CLI's words for a skip code (the JSON report's `reason` too). */
function skipReason(skip: ReplaySkip): string {
  switch (skip.skip) {
    case 'already_delivered':
      return 'already delivered';
    case 'accepted_by_qstash':
      return 'accepted by QStash (add --include-accepted)';
    case 'not_replayable':
      return `status ${skip.status} is not replayable`;
    case 'taken':
      return 'delivered or replayed since it was selected';
    case 'other_queue':
      return "another queue's (replay it with that HOOKRELAY_QUEUE)";
  }
}

/** A result as `--json` prints it: a skip carries its worded `reason`, as before codes existed. */
type ReportedResult = Exclude<ReplayResult, { result: 'skipped' }> | { id: string; result: 'skipped'; reason: string };

function reported(r: ReplayResult): ReportedResult {
  return r.result === 'skipped' ? { id: r.id, result: 'skipped', reason: skipReason(r) } : r;
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

/** `replay --json` prints exactly this one object: the summary and every id's result. */
type ReplayReport = { dryRun: boolean; replayed: number; wouldReplay: number; skipped: number; failed: number; results: ReportedResult[] };

/** What `hookrelay replay` (and `endpoints enable --replay`) does once its flags are checked. */
export async function runReplay(ctx: CliContext, ids: string[], flags: ReplayFlags): Promise<number> {
  // Loaded when a replay runs: drizzle, BullMQ and the progress bar stay out of `hookrelay --help`.
  const ops = await import('../admin/replay.ts');
  const byId = ids.length > 0;
  const { candidates, skipped, unknown } = byId
    ? await ops.replayCandidatesByIds(ctx.store.db, ids, flags.includeAccepted === true, ctx.settings.HOOKRELAY_QUEUE)
    : { candidates: await byFilter(ops, ctx, flags), skipped: [], unknown: [] };
  const results: ReportedResult[] = [
    ...unknown.map((id) => ({ id, result: 'unknown' as const })),
    ...skipped.map((s) => ({ id: s.id, result: 'skipped' as const, reason: skipReason(s) })),
  ];
  const summary = { dryRun: flags.dryRun === true, replayed: 0, wouldReplay: 0, skipped: skipped.length, failed: unknown.length };
  for (const id of unknown) printErrorText(`${id}: unknown delivery id\n`);

  if (candidates.length === 0) {
    if (flags.json) printJson({ ...summary, results } satisfies ReplayReport);
    if (!flags.json) {
      for (const s of skipped) printText(`${s.id}: skipped (${skipReason(s)})\n`);
      if (skipped.length > 0) printText(`replayed 0, skipped ${skipped.length}, failed ${unknown.length}\n`);
      else if (!byId) printText('nothing to replay: no deliveries match\n');
    }
    // A filter matching nothing is a healthy system (exit 0); explicit ids that are all unknown are bad usage.
    if (unknown.length === 0) return EXIT.ok;
    return skipped.length > 0 ? EXIT.partial : EXIT.usage;
  }

  if (flags.dryRun) {
    const present = await ops.previewReplay(ctx.store.db, candidates);
    results.push(...present.map(({ id, result, status, hookId, eventType }) => ({ id, result, status, hookId, eventType })));
    if (flags.json) printJson({ ...summary, wouldReplay: present.length, results } satisfies ReplayReport);
    if (!flags.json) {
      for (const s of skipped) printText(`${s.id}: skipped (${skipReason(s)})\n`);
      printText(
        formatTable(
          ['ID', 'STATUS', 'EVENT', 'HOOK', 'LAST ERROR', 'CREATED'],
          present.map((r) => [r.id, r.status, r.eventType, r.hookId, r.lastErrorClass ?? '-', iso(r.createdAt)]),
        ),
      );
      printText(`dry run: would replay ${present.length}, skipped ${skipped.length}; nothing changed\n`);
    }
    return unknown.length > 0 ? EXIT.partial : EXIT.ok;
  }

  if (candidates.length > CONFIRM_ABOVE && !flags.yes) {
    // Nobody can answer a prompt from cron or a pipe: refuse instead of proceeding unasked.
    if (!process.stdin.isTTY) {
      printErrorText(
        `hookrelay: replaying ${candidates.length} deliveries (more than ${CONFIRM_ABOVE}) needs --yes when stdin is not a terminal; nothing changed\n`,
      );
      return EXIT.usage;
    }
    if (!(await confirm(candidates.length))) {
      printErrorText('hookrelay: replay cancelled; nothing changed\n');
      return EXIT.usage;
    }
  }
  if (!flags.json) for (const s of skipped) printText(`${s.id}: skipped (${skipReason(s)})\n`);

  const queue = await ctx.queue();
  const cliProgress = process.stderr.isTTY && !flags.json ? (await import('cli-progress')).default : undefined;
  const bar =
    cliProgress !== undefined
      ? new cliProgress.SingleBar({ format: 'replay [{bar}] {value}/{total} {eta_formatted} left', hideCursor: true }, cliProgress.Presets.shades_classic)
      : undefined;
  bar?.start(candidates.length, 0);
  // Each replayed endpoint's open breaker probes now, once per run (Q10).
  const probe = (keys: readonly string[]) => ctx.operator.fromRedis((gate) => Promise.all(keys.map((k) => gate.probeNow(k))));
  const outcome = await ops.replayDeliveries(ctx.store.db, queue, candidates, {
    includeAccepted: flags.includeAccepted === true,
    probe,
    ...(flags.rate ? { rate: flags.rate } : {}),
    onBatch: (batch, done) => {
      const notQueued = batch.filter((r) => r.result === 'not_queued').length;
      summary.skipped += batch.filter((r) => r.result === 'skipped').length;
      summary.replayed += batch.filter((r) => r.result === 'replayed').length;
      summary.failed += notQueued;
      if (notQueued > 0) {
        printErrorText(
          `${notQueued} deliveries could not be added to the queue (Redis?); they are queued in the ledger and the worker's reconciler will enqueue them\n`,
        );
      }
      bar?.update(done);
    },
  });
  results.push(...outcome.map(reported));
  bar?.stop();
  if (flags.json) printJson({ ...summary, results } satisfies ReplayReport);
  if (!flags.json) printText(`replayed ${summary.replayed}, skipped ${summary.skipped}, failed ${summary.failed}\n`);
  return summary.failed > 0 ? EXIT.partial : EXIT.ok;
}
