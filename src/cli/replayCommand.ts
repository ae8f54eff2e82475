import type { Command } from 'commander';
import { addFilterOptions } from './deliveriesCommand.ts';
import { CliUsageError } from './errors.ts';
import { CONFIRM_ABOVE, type ReplayFlags } from './replayFlags.ts';

export { CONFIRM_ABOVE, type ReplayFlags } from './replayFlags.ts';

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
      const [{ withContext }, { runReplay }] = await Promise.all([import('./context.ts'), import('./replayRun.ts')]);
      process.exitCode = await withContext((ctx) => runReplay(ctx, ids, flags));
    });
}
