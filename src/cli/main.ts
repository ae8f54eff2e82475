import { Command, CommanderError } from 'commander';
import { loadSettings, SettingsError } from '../config/settings.ts';
import { RedisUnavailableError } from '../queue/redisConnection.ts';
import { HookConfigError } from '../contract/errors.ts';
import { CliUsageError } from './errors.ts';
import { registerDeliveriesCommand } from './deliveriesCommand.ts';
import { registerReplayCommand } from './replayCommand.ts';
import { registerEnqueueCommand } from './enqueueCommand.ts';
import { registerStatsCommand } from './statsCommand.ts';
import { registerRecordsCommand } from './recordsCommand.ts';

/** Exit codes (issue 6): 0 success, 1 partial failure, 2 bad usage or nothing matched. */
export const EXIT = { ok: 0, partial: 1, usage: 2 } as const;

export function buildProgram(): Command {
  const program = new Command('hookrelay')
    .description('hookrelay: durable lifecycle hooks for agent runtimes (worker, migrations, delivery admin)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .addHelpText('after', '\nExamples:\n  hookrelay start\n  hookrelay deliveries list --status failed --since 2h\n  hookrelay replay --status failed --dry-run');

  program
    .command('start')
    .description('run the worker on the configured stores, or the embedded PGlite store when DATABASE_URL is unset')
    .addHelpText('after', '\nExample:\n  npx hookrelay start\n  DATABASE_URL=postgres://postgres@127.0.0.1:5432/hookrelay npx hookrelay start')
    .action(async () => {
      const { runUntilSignal } = await import('../../workers/delivery.ts');
      await runUntilSignal({ allowPrivateRedis: true });
    });

  program
    .command('worker')
    .description('run the delivery worker only (for deployments)')
    .option('--concurrency <n>', 'jobs processed at once (default HOOKRELAY_CONCURRENCY)', (v) => parsePositiveInt(v, '--concurrency'))
    .addHelpText('after', '\nExample:\n  npx hookrelay worker --concurrency 32')
    .action(async (opts: { concurrency?: number }) => {
      const { runUntilSignal } = await import('../../workers/delivery.ts');
      await runUntilSignal({ concurrency: opts.concurrency });
    });

  program
    .command('migrate')
    .description('apply the database migrations (idempotent)')
    .addHelpText('after', '\nExample:\n  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx hookrelay migrate')
    .action(async () => {
      const settings = loadSettings();
      const { openCliStore } = await import('./cliStore.ts');
      const store = await openCliStore(settings);
      try {
        const { migrateStore } = await import('../store/migrate.ts');
        await migrateStore(store);
        process.stdout.write('migrations applied\n');
      } finally {
        await store.close();
      }
    });

  registerDeliveriesCommand(program, parsePositiveInt);
  registerReplayCommand(program, parsePositiveInt);
  registerEnqueueCommand(program);
  registerStatsCommand(program);
  registerRecordsCommand(program, parsePositiveInt);
  return program;
}

export function parsePositiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliUsageError(`${flag} must be a whole number ≥ 1 (got "${value}")`);
  return n;
}


/** Run the CLI; errors become one line on stderr and the documented exit code. */
export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? EXIT.ok : Number(process.exitCode);
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof SettingsError || err instanceof CliUsageError || err instanceof RedisUnavailableError || err instanceof HookConfigError) {
      process.stderr.write(`hookrelay: ${err.message}\n`);
      return EXIT.usage;
    }
    // A driver error wraps the server's reason in `cause`; print that, not the query text.
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
    const message = cause ? `storage error: ${cause}` : err instanceof Error ? err.message : String(err);
    process.stderr.write(`hookrelay: ${message}\n`);
    return EXIT.partial;
  }
}
