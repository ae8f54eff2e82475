import { readFileSync } from 'node:fs';
import { Argument, Command, CommanderError, Option } from 'commander';
import { loadSettings } from '../config/settings.ts';
import {
  SettingsError,
  RedisUnavailableError,
  EmbeddedStoreUnavailableError,
  EmbeddedStoreUntrustedError,
  StoreNotFoundError,
  HookConfigError,
  isHookrelayError,
  CliUsageError,
} from '../contract/errors.ts';
import { isStoreUnreachable, storeUnavailable } from '../store/unreachable.ts';
import { COMPLETION_SHELLS, type CompletionShell, completionScript } from './completion.ts';
import { EXIT } from './exitCodes.ts';
import { flushed, printError } from './output.ts';
import { registerDeliveriesCommand } from './deliveriesCommand.ts';
import { registerReplayCommand } from './replayCommand.ts';
import { registerEnqueueCommand } from './enqueueCommand.ts';
import { registerStatsCommand } from './statsCommand.ts';
import { registerEndpointsCommand } from './endpointsCommand.ts';
import { registerRecordsCommand } from './recordsCommand.ts';
import { registerApprovalsCommand } from './approvalsCommand.ts';
import { registerConsoleCommand } from './consoleCommand.ts';
import { withDefined } from '../util/withDefined.ts';

/** The package version, for `--version`. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

type WorkerFlags = { concurrency?: number; plugin?: string; migrate?: boolean };

/**
 * What `start` and `worker` run: supplied by the composition root (src/entry/cli.ts), so the
 * admin CLI never imports the worker and `hookrelay --help` loads none of it.
 */
export type WorkerRunner = (options: { allowPrivateRedis: boolean; concurrency?: number; plugin?: string; migrate?: false }) => Promise<void>;
export type CliDeps = { runWorker: WorkerRunner };

/** Errors that are the caller's to fix: one line and the usage exit code, no storage wording. */
const USAGE_ERROR_CODES: ReadonlySet<string> = new Set(['HOOKRELAY_WORKER_PLUGIN_INVALID']);

/** `start` and `worker` share these: the email look-up plugin and skipping migrations. */
function addWorkerOptions(cmd: Command): Command {
  return cmd
    .option('--plugin <file>', 'module exporting emailLookup(userId) → email, for userEmail in payloads')
    .addOption(new Option('--no-migrate', 'do not apply migrations at start (a migrate job owns them; or HOOKRELAY_MIGRATE=false)'));
}

function workerOptions(flags: WorkerFlags, allowPrivateRedis: boolean): Parameters<WorkerRunner>[0] {
  return {
    allowPrivateRedis,
    ...withDefined({ concurrency: flags.concurrency }),
    // Commander sets `migrate: true` by default; only an explicit --no-migrate overrides the setting.
    ...(flags.migrate === false ? { migrate: false as const } : {}),
    ...withDefined({ plugin: flags.plugin }),
  };
}

const NO_WORKER: CliDeps = {
  runWorker: () => Promise.reject(new CliUsageError('this build of the CLI cannot run the worker: run the `hookrelay` bin')),
};

function buildProgram(deps: CliDeps = NO_WORKER): Command {
  const program = new Command('hookrelay')
    .description('hookrelay: durable lifecycle hooks for agent runtimes (worker, migrations, delivery admin)')
    .showHelpAfterError('(run with --help for usage)')
    .version(packageVersion(), '-V, --version', 'print the hookrelay version')
    .exitOverride()
    .addHelpText(
      'after',
      '\nExamples:\n  hookrelay start\n  hookrelay deliveries list --status failed --since 2h\n  hookrelay replay --status failed --dry-run',
    );

  addWorkerOptions(program.command('start').description('run the worker on the configured stores, or the embedded PGlite store when DATABASE_URL is unset'))
    .addHelpText(
      'after',
      '\nExample:\n  npx hookrelay start\n  npx hookrelay start --plugin ./hooks-plugin.mjs\n  DATABASE_URL=postgres://postgres@127.0.0.1:5432/hookrelay npx hookrelay start',
    )
    .action((flags: WorkerFlags) => deps.runWorker(workerOptions(flags, true)));

  addWorkerOptions(
    program
      .command('worker')
      .description('run the delivery worker only (for deployments)')
      .option('--concurrency <n>', 'jobs processed at once (default HOOKRELAY_CONCURRENCY)', (v) => parsePositiveInt(v, '--concurrency')),
  )
    .addHelpText('after', '\nExample:\n  npx hookrelay worker --concurrency 32\n  npx hookrelay worker --plugin ./hooks-plugin.mjs --no-migrate')
    .action((flags: WorkerFlags) => deps.runWorker(workerOptions(flags, false)));

  program
    .command('migrate')
    .description('apply the database migrations (idempotent; concurrent runs wait for each other)')
    .addHelpText('after', '\nExample:\n  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx hookrelay migrate')
    .action(async () => {
      const settings = loadSettings();
      const { openCliStore } = await import('./cliStore.ts');
      const store = await openCliStore(settings, { create: true });
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
  registerEndpointsCommand(program, parsePositiveInt);
  registerRecordsCommand(program, parsePositiveInt);
  registerApprovalsCommand(program, parsePositiveInt);
  registerConsoleCommand(program, (v, flag) => parsePositiveInt(v, flag, MAX_PORT));
  program
    .command('completion')
    .description('print a shell completion script (bash or zsh), generated from these commands')
    .addArgument(new Argument('<shell>', 'bash | zsh').choices(COMPLETION_SHELLS))
    .addHelpText(
      'after',
      '\nExamples:\n  source <(hookrelay completion bash)        # in ~/.bashrc\n  hookrelay completion zsh > "${fpath[1]}/_hookrelay"   # then restart zsh (compinit)',
    )
    .action((shell: CompletionShell) => {
      process.stdout.write(completionScript(program, shell));
    });
  return program;
}

/** The largest count a numeric flag takes: Postgres `integer`, and far below where a limit, rate or cap means anything. */
const MAX_FLAG_INT = 2_147_483_647;
const MAX_PORT = 65_535;

/**
 * A whole-number flag in 1…max, written as plain digits (`1e20`, `0x10`, `5.0` are refused):
 * anything else is a usage error naming the flag (exit 2), never a value that fails later in
 * storage, a timer or `listen`.
 */
function parsePositiveInt(value: string, flag: string, max: number = MAX_FLAG_INT): number {
  const n = /^\d{1,16}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new CliUsageError(`${flag} must be a whole number from 1 to ${max} (got "${value}")`);
  return n;
}

/** Run the CLI; errors become one line on stderr and the documented exit code. */
export async function main(argv: string[] = process.argv, deps: CliDeps = NO_WORKER): Promise<number> {
  const program = buildProgram(deps);
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? EXIT.ok : Number(process.exitCode);
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (
      err instanceof SettingsError ||
      err instanceof CliUsageError ||
      err instanceof RedisUnavailableError ||
      err instanceof EmbeddedStoreUnavailableError ||
      err instanceof EmbeddedStoreUntrustedError ||
      err instanceof StoreNotFoundError ||
      err instanceof HookConfigError ||
      (isHookrelayError(err) && USAGE_ERROR_CODES.has(err.code))
    ) {
      printError(err.message);
      return EXIT.usage;
    }
    // Q13: Postgres away: say so and what to check, not a driver message or a stack.
    if (isStoreUnreachable(err)) {
      printError(storeUnavailable(err, 'check that it runs and that DATABASE_URL points at it').message);
      return EXIT.partial;
    }
    // A driver error wraps the server's reason in `cause`; print that, not the query text.
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
    const message = cause ? `storage error: ${cause}` : err instanceof Error ? err.message : String(err);
    printError(message);
    return EXIT.partial;
  }
}

/**
 * The bin's entry: run, then exit with the documented code only once stdout and stderr are
 * flushed — to a pipe, a file or a slow reader nothing is cut off. Exiting (rather than waiting
 * for the event loop to empty) also means no stray handle can keep a finished command alive.
 */
export async function runCli(argv: string[] = process.argv, deps: CliDeps = NO_WORKER): Promise<never> {
  // A reader that went away (`| head`) is not an error of the command; the rest is dropped.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const code = await main(argv, deps);
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
