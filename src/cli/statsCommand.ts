import type { Command } from 'commander';
import { formatTable, printJson, printText } from './output.ts';

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
const QUEUE_TIMEOUT_S = 3;

type SpoolFigures = { events: number; bytes: number; oldestAgeSeconds: number | null; rejected: number };

export function registerStatsCommand(program: Command): void {
  program
    .command('stats')
    .description('ledger counts by status, queue depths, the age of the oldest undelivered delivery, and events waiting in local spools')
    .option('--json', 'one JSON object')
    .addHelpText('after', '\nExample:\n  hookrelay stats --json | jq .ledger')
    .action(async (flags: { json?: boolean }) => {
      const [{ withContext }, { ledgerStats }, { loadSettings }, { createSpoolReader }] = await Promise.all([
        import('./context.ts'),
        import('../admin/ledgerStats.ts'),
        import('../config/settings.ts'),
        import('../queue/spoolSummary.ts'),
      ]);
      const ageSeconds = (at: Date | null) => (at ? Math.max(0, Math.round((Date.now() - at.getTime()) / 1000)) : null);
      // F1: read from this host's files first — what it shows matters most while Postgres is away.
      const read = await createSpoolReader(loadSettings().HOOKRELAY_DATA_DIR)();
      const spool: SpoolFigures = { events: read.events, bytes: read.bytes, oldestAgeSeconds: ageSeconds(read.oldestAt), rejected: read.rejected };
      try {
        await withContext(async (ctx) => {
          // Redis unreachable (refused: at once; silent: after a few seconds): the ledger figures still stand.
          // Asked first and awaited after the ledger: loading ioredis and connecting overlap the ledger's queries (issue 50).
          const counting = ctx.operator.jobCounts(QUEUE_STATES);
          const ledger = await ledgerStats(ctx.store.db, ctx.settings.HOOKRELAY_QUEUE);
          const queue = (await counting) ?? null;
          const waitingAge = ageSeconds(ledger.oldestUndeliveredAt);
          const heldAge = ageSeconds(ledger.oldestHeldAt);
          // Held rows are undelivered too: "none" while an operator holds deliveries would hide them.
          const oldestAgeSeconds = waitingAge === null ? heldAge : heldAge === null ? waitingAge : Math.max(waitingAge, heldAge);
          const ledgerCounts = Object.fromEntries(ledger.byStatus.map((s) => [s.status, s.count]));
          const held = ledgerCounts.held ?? 0;
          if (flags.json)
            return printJson({ ledger: ledgerCounts, queue, oldestUndeliveredAgeSeconds: oldestAgeSeconds, held, oldestHeldAgeSeconds: heldAge, spool });
          printText(
            formatTable(
              ['STATUS', 'COUNT'],
              ledger.byStatus.map((s) => [s.status, String(s.count)]),
            ),
          );
          printText('\n');
          printText(
            queue
              ? formatTable(
                  ['QUEUE', 'JOBS'],
                  QUEUE_STATES.map((s) => [s, String(queue[s] ?? 0)]),
                )
              : `queue: Redis did not answer at REDIS_URL (refused, or no answer within ${QUEUE_TIMEOUT_S} s)\n`,
          );
          printText(`\noldest undelivered: ${oldestAgeSeconds === null ? 'none' : `${oldestAgeSeconds} s ago`}\n`);
          if (held > 0)
            printText(
              `held: ${held} ${held === 1 ? 'delivery waits' : 'deliveries wait'} for a disabled endpoint (the oldest ${heldAge ?? 0} s ago), never sent until you enable it: hookrelay endpoints list\n`,
            );
          printText(spoolLine(spool));
        });
      } catch (error) {
        // The store did not answer: what the spools hold is still worth saying (then the error, as every command).
        if (spool.events > 0 || spool.rejected > 0) printText(flags.json ? `${JSON.stringify({ spool })}\n` : spoolLine(spool));
        throw error;
      }
    });
}

/** F1: one line on the local spools (also when empty: "spool: empty"). */
function spoolLine(s: SpoolFigures): string {
  const rejected = s.rejected > 0 ? `; ${s.rejected} refused by the ledger at drain time, set aside in rejected.jsonl (see docs/delivery.md)` : '';
  if (s.events === 0) return `spool: empty${rejected}\n`;
  return `spool: ${s.events} ${s.events === 1 ? 'event waits' : 'events wait'} in local spools under HOOKRELAY_DATA_DIR (${s.bytes} bytes, the oldest ${s.oldestAgeSeconds ?? 0} s ago): accepted while Postgres was away; the producer drains them into the ledger when it answers${rejected}\n`;
}
