import type { Command } from 'commander';
import { formatTable, iso, printJsonArray, printText } from './output.ts';

export function registerRecordsCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  const records = program.command('records').description('AGENT-HOOKS-0.1 interception records (payload-free)');
  records
    .command('list')
    .description('interception records, newest first')
    .option('--session <id>', 'session id (the operation id at the tool seam)')
    .option('--limit <n>', 'at most this many (default 50)', (v) => parsePositiveInt(v, '--limit'))
    .option('--json', 'a JSON array of records, one per line ([] when none match)')
    .addHelpText('after', '\nExample:\n  hookrelay records list --session op_123 --json')
    .action(async (flags: { session?: string; limit?: number; json?: boolean }) => {
      const [{ withContext }, { listInterceptionRecords }] = await Promise.all([import('./context.ts'), import('../store/interceptionRecordsRepo.ts')]);
      await withContext(async (ctx) => {
        const rows = await listInterceptionRecords(ctx.store.db, { ...(flags.session ? { sessionId: flags.session } : {}), limit: flags.limit ?? 50 });
        if (flags.json) return printJsonArray(rows.map((r) => r.record));
        if (rows.length === 0) {
          printText('no records match\n');
          return;
        }
        printText(
          formatTable(
            ['SESSION', 'SEQ', 'POINT', 'DECISION', 'REASON', 'AT'],
            rows.map((r) => {
              const v = (r.record as { verdict?: { decision?: string; reason?: string | null } }).verdict ?? {};
              return [r.sessionId, String(r.sequence), r.point, v.decision ?? '-', v.reason ?? '-', iso(r.createdAt)];
            }),
          ),
        );
      });
    });
}
