import type { Command } from 'commander';
import { formatTable, printJson, printText } from './output.ts';

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
const QUEUE_TIMEOUT_MS = 3_000;

export function registerStatsCommand(program: Command): void {
  program
    .command('stats')
    .description('ledger counts by status, queue depths and the age of the oldest undelivered delivery')
    .option('--json', 'one JSON object')
    .addHelpText('after', '\nExample:\n  hookrelay stats --json | jq .ledger')
    .action(async (flags: { json?: boolean }) => {
      const [{ withContext }, { ledgerStats }] = await Promise.all([import('./context.ts'), import('../operator/ledgerStats.ts')]);
      await withContext(async (ctx) => {
        const ledger = await ledgerStats(ctx.store.db);
        let queue: Record<string, number> | null = null;
        try {
          const counts = ctx.queue().getJobCounts(...QUEUE_STATES);
          queue = await Promise.race([counts, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), QUEUE_TIMEOUT_MS))]);
        } catch {
          queue = null; // Redis unreachable: the ledger figures still stand
        }
        const ageSeconds = (at: Date | null) => (at ? Math.max(0, Math.round((Date.now() - at.getTime()) / 1000)) : null);
        const waitingAge = ageSeconds(ledger.oldestUndeliveredAt);
        const heldAge = ageSeconds(ledger.oldestHeldAt);
        // Held rows are undelivered too: "none" while an operator holds deliveries would hide them.
        const oldestAgeSeconds = waitingAge === null ? heldAge : heldAge === null ? waitingAge : Math.max(waitingAge, heldAge);
        const ledgerCounts = Object.fromEntries(ledger.byStatus.map((s) => [s.status, s.count]));
        const held = ledgerCounts.held ?? 0;
        if (flags.json) return printJson({ ledger: ledgerCounts, queue, oldestUndeliveredAgeSeconds: oldestAgeSeconds, held, oldestHeldAgeSeconds: heldAge });
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
                QUEUE_STATES.map((s) => [s, String(queue![s] ?? 0)]),
              )
            : `queue: Redis did not answer at REDIS_URL within ${QUEUE_TIMEOUT_MS / 1000} s\n`,
        );
        printText(`\noldest undelivered: ${oldestAgeSeconds === null ? 'none' : `${oldestAgeSeconds} s ago`}\n`);
        if (held > 0)
          printText(
            `held: ${held} ${held === 1 ? 'delivery waits' : 'deliveries wait'} for a disabled endpoint (the oldest ${heldAge ?? 0} s ago), never sent until you enable it: hookrelay endpoints list\n`,
          );
      });
    });
}
