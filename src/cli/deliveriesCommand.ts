import type { Command } from 'commander';
import { DELIVERY_STATUSES, ORDERING_BLOCKED_REASON, type Delivery } from '../contract/delivery.ts';
import type { DeliveryFilter } from '../store/deliveriesRepo.ts';
import { deliveryFilterFrom } from '../store/deliveryFilterInput.ts';
import { FilterInputError, CliUsageError } from '../contract/errors.ts';
import { failureText } from '../admin/failureText.ts';
import { formatTable, iso, jsonText, printJson, printJsonArray, printLines, shown, truncated } from './output.ts';

const DEFAULT_LIST_LIMIT = 50;

export type FilterFlags = {
  status?: string;
  operation?: string;
  hook?: string;
  event?: string;
  endpoint?: string;
  tenant?: string;
  since?: string;
  until?: string;
  limit?: number;
};

/** Shared by `deliveries list` and `replay`: the filter flags, checked with one-line errors. */
export function addFilterOptions(cmd: Command): Command {
  return cmd
    .option('--status <status>', `ledger status: ${DELIVERY_STATUSES.join(' | ')}`)
    .option('--operation <id>', 'operation id')
    .option('--hook <id>', 'hook id')
    .option('--event <type>', 'hook type, e.g. onComplete')
    .option('--endpoint <url>', 'endpoint URL or key, any spelling (see `hookrelay endpoints list`)')
    .option('--tenant <name>', "one tenant's deliveries")
    .option('--since <time>', 'created at or after: ISO 8601 or relative (15m, 2h, 3d)')
    .option('--until <time>', 'created at or before: ISO 8601 or relative');
}

/** The shared filter parser (store/deliveryFilterInput.ts), its errors as one-line usage errors. */
export function toFilter(flags: FilterFlags): DeliveryFilter {
  try {
    return deliveryFilterFrom(flags, (field) => `--${field}`);
  } catch (err) {
    if (err instanceof FilterInputError) throw new CliUsageError(err.message);
    throw err;
  }
}

function summary(d: Delivery) {
  return {
    id: d.id,
    status: d.status,
    operationId: d.operationId,
    tenant: d.tenant,
    queue: d.queue,
    eventType: d.eventType,
    hookId: d.hookId,
    transport: d.transport,
    attemptCount: d.attemptCount,
    generation: d.generation,
    lastErrorClass: d.lastErrorClass,
    lastHttpStatus: d.lastHttpStatus,
    failureReason: d.failureReason,
    /** One line: the receiver's answer, or what it ended waiting for ("circuit_open: ended by the breaker after 2 attempts, last HTTP 500"). */
    failure: failureText(d),
    sequence: d.sequence,
    deadlineAt: d.deadlineAt?.toISOString() ?? null,
    createdAt: d.createdAt.toISOString(),
    deliveredAt: d.deliveredAt?.toISOString() ?? null,
  };
}

/** The STATUS column: a delivery held back by a failed `block` delivery of its hook says so (SEC-H7). */
function statusText(d: Delivery): string {
  return d.failureReason === ORDERING_BLOCKED_REASON && d.status !== 'failed' ? `${d.status} (blocked)` : d.status;
}

/** Widest LAST ERROR cell: an `ssrf_blocked` reason (~300 characters) made every row as wide. */
const LAST_ERROR_MAX = 60;

/** The LAST ERROR column: the receiver's answer, or what the delivery ended waiting for (admin/failureText.ts), cut to LAST_ERROR_MAX. */
function lastError(d: Delivery): string {
  return truncated(failureText(d) ?? '-', LAST_ERROR_MAX);
}

/** Per failed attempt: the receiver's whole excerpt and the headers sent (Q8). */
function attemptEvidenceLines(d: Delivery): string[] {
  const lines: string[] = [];
  for (const a of d.attempts) {
    if (a.outcome !== 'failed' || (a.responseExcerpt === null && !a.requestHeaders)) continue;
    lines.push(`attempt ${a.attempt}: ${a.httpStatus !== null ? `HTTP ${a.httpStatus}` : shown(a.errorClass ?? 'failed')}`);
    if (a.responseExcerpt !== null) lines.push(`  response: ${jsonText(a.responseExcerpt)}`);
    if (a.requestHeaders) for (const [name, value] of Object.entries(a.requestHeaders)) lines.push(`  sent ${shown(name)}: ${shown(value)}`);
  }
  return lines.length > 0 ? ['', ...lines] : [];
}

export function registerDeliveriesCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  const deliveries = program.command('deliveries').description('inspect the delivery ledger');

  addFilterOptions(deliveries.command('list').description('list deliveries, newest first'))
    .option('--limit <n>', `at most this many rows (default ${DEFAULT_LIST_LIMIT})`, (v) => parsePositiveInt(v, '--limit'))
    .option('--critical', "only critical failures: `fallback: 'none'` deliveries that failed for good (Q4), whatever the reason")
    .option('--json', 'a JSON array, one delivery per line ([] when none match)')
    .addHelpText(
      'after',
      '\nExamples:\n  hookrelay deliveries list --status failed --since 2h\n  hookrelay deliveries list --critical\n  hookrelay deliveries list --operation op_123 --json | jq -r ".[].id"',
    )
    .action(async (flags: FilterFlags & { json?: boolean; critical?: boolean }) => {
      const filter: DeliveryFilter = { ...toFilter(flags), ...(flags.critical ? { critical: true } : {}) };
      // Loaded on use: the store and queue clients stay out of `hookrelay --help`.
      const [{ withContext }, { listDeliveries }] = await Promise.all([import('./context.ts'), import('../store/deliveriesRepo.ts')]);
      await withContext(async (ctx) => {
        const rows = await listDeliveries(ctx.store.db, { ...filter, limit: flags.limit ?? DEFAULT_LIST_LIMIT });
        if (flags.json) return printJsonArray(rows.map(summary));
        if (rows.length === 0) {
          printLines(['no deliveries match']);
          return;
        }
        process.stdout.write(
          formatTable(
            ['ID', 'STATUS', 'TENANT', 'EVENT', 'HOOK', 'OPERATION', 'ATTEMPTS', 'LAST ERROR', 'CREATED'],
            rows.map((d) => [d.id, statusText(d), d.tenant, d.eventType, d.hookId, d.operationId, String(d.attemptCount), lastError(d), iso(d.createdAt)]),
          ),
        );
      });
    });

  deliveries
    .command('skip')
    .description('give up on failed or held deliveries: status skipped (final, never sent); ordered deliveries waiting behind them go')
    .argument('<ids...>', 'delivery ids (dlv_…)')
    .option('--json', 'one JSON object per id: {"id","result","status"?}')
    .addHelpText(
      'after',
      "\nA delivery with onFailure 'block' that failed holds back the later ordered deliveries of its\noperation: replay it (`hookrelay replay <id>`) or skip it.\n\nExample:\n  hookrelay deliveries skip dlv_01J9Z3R6Y4V8Q2W7E5T1N0K3M8",
    )
    .action(async (ids: string[], flags: { json?: boolean }) => {
      const [{ withContext }, { skipAndRelease }] = await Promise.all([import('./context.ts'), import('../admin/skip.ts')]);
      await withContext(async (ctx) => {
        const { outcomes, woken } = await skipAndRelease(ctx.store.db, ctx.queue, ids);
        if (flags.json) {
          for (const o of outcomes) process.stdout.write(`${jsonText(o.result === 'skipped' ? { id: o.id, result: o.result } : o)}\n`);
        } else {
          const lines = outcomes.map((o) =>
            o.result === 'skipped'
              ? `${shown(o.id)}  skipped`
              : o.result === 'unknown'
                ? `${shown(o.id)}  unknown: no delivery with this id`
                : `${shown(o.id)}  not skipped: status ${o.status} (only failed and held deliveries can be skipped)`,
          );
          if (woken > 0) lines.push(`woke ${woken} ordered ${woken === 1 ? 'delivery' : 'deliveries'} waiting behind them`);
          if (lines.length > 0) printLines(lines);
        }
        // Exit 1 when an id was not skipped, so scripts notice (nothing else changed for it).
        if (outcomes.some((o) => o.result !== 'skipped')) process.exitCode = 1;
      });
    });

  deliveries
    .command('show')
    .description('one delivery: attempts, errors, the hook (header templates, never resolved secrets) and payload')
    .argument('<id>', 'delivery id (dlv_…)')
    .option('--json', 'one JSON object')
    .addHelpText('after', '\nExample:\n  hookrelay deliveries show dlv_01J9Z3R6Y4V8Q2W7E5T1N0K3M8')
    .action(async (id: string, flags: { json?: boolean }) => {
      const [{ withContext }, { getDeliveryRow, toDelivery }] = await Promise.all([import('./context.ts'), import('../store/deliveriesRepo.ts')]);
      await withContext(async (ctx) => {
        const row = await getDeliveryRow(ctx.store.db, id);
        if (!row) throw new CliUsageError(`no delivery with id ${jsonText(id)}`);
        const d = toDelivery(row);
        // The library's vocabulary (Delivery): `attempts` is the list, `attemptCount` the total.
        if (flags.json)
          return printJson({ ...summary(d), occurredAt: row.occurredAt.toISOString(), hook: row.hook, payload: row.payload, attempts: d.attempts });
        const lines = [
          `${shown(d.id)}  ${shown(statusText(d))}  ${shown(d.eventType)} → ${shown(d.hookId)} (${shown(d.transport)})`,
          `tenant ${shown(d.tenant)}  queue ${shown(d.queue ?? '(any)')}`,
          `operation ${shown(d.operationId)}  generation ${d.generation}${d.sequence !== null ? `  sequence ${d.sequence}` : ''}  created ${iso(d.createdAt)}  delivered ${iso(d.deliveredAt)}`,
          `deadline ${iso(d.deadlineAt)}${d.status === 'failed' ? `  failed: ${shown(failureText(d) ?? '-')}` : ''}`,
          '',
          d.attempts.length === 0
            ? 'no attempts yet'
            : formatTable(
                ['#', 'GEN', 'AT', 'TRANSPORT', 'OUTCOME', 'ERROR', 'HTTP', 'MS', 'RESPONSE'],
                d.attempts.map((a) => [
                  String(a.attempt),
                  String(a.generation),
                  a.at,
                  a.transport,
                  a.outcome,
                  a.errorClass ?? '-',
                  a.httpStatus === null ? '-' : String(a.httpStatus),
                  String(Math.round(a.durationMs)),
                  a.responseExcerpt ? jsonText(a.responseExcerpt.slice(0, 60)) : '-',
                ]),
              ).trimEnd(),
          ...attemptEvidenceLines(d),
          '',
          `hook: ${jsonText(row.hook)}`,
          `payload: ${row.payload === null ? '(pruned by retention)' : jsonText(row.payload)}`,
        ];
        printLines(lines);
      });
    });
}
