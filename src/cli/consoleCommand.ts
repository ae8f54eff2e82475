import type { Command } from 'commander';
import { CliUsageError } from '../contract/errors.ts';
import { onStopSignals } from '../observability/stopSignals.ts';
import { printText } from './output.ts';

/** Bound on each close step of a stopping console (HTTP server, Redis, the store). */
const CLOSE_STEP_TIMEOUT_MS = 2_000;

/** True when `step` settled (done or failed) within CLOSE_STEP_TIMEOUT_MS. */
async function withinCloseTimeout(step: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    step.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_STEP_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** Where `hookrelay console` listens unless told otherwise: this machine only. */
const DEFAULT_CONSOLE_PORT = 8788;
const DEFAULT_CONSOLE_HOST = '127.0.0.1';

/**
 * `hookrelay console`: the operator console for a machine that runs no worker (a worker with
 * HOOKRELAY_CONSOLE_TOKEN serves the same pages under /console on its HTTP port).
 */
export function registerConsoleCommand(program: Command, parsePort: (v: string, flag: string) => number): void {
  program
    .command('console')
    .description('serve the operator console (deliveries, replay, endpoints, overview) at http://HOST:PORT/console')
    .option('--port <n>', `port (default ${DEFAULT_CONSOLE_PORT})`, (v) => parsePort(v, '--port'))
    .option('--host <address>', `address to listen on (default ${DEFAULT_CONSOLE_HOST}: this machine only)`)
    .addHelpText(
      'after',
      '\nNeeds HOOKRELAY_CONSOLE_TOKEN (at least 16 characters); sign in with it in the browser.\n\nExample:\n  HOOKRELAY_CONSOLE_TOKEN=$(openssl rand -hex 24) hookrelay console --port 8788',
    )
    .action(async (flags: { port?: number; host?: string }) => {
      const [
        { loadSettings },
        { resolveLoadedConfig },
        { openCliStore },
        { openOperatorQueue },
        { createConsole },
        { startHttpServer },
        { createLogger },
        { createCredentialGuard },
        { opsAccessPolicy },
        { pingStore },
      ] = await Promise.all([
        import('../config/settings.ts'),
        import('../config/resolveConfig.ts'),
        import('./cliStore.ts'),
        import('../admin/operatorQueue.ts'),
        import('../console/consoleHandler.ts'),
        import('../observability/httpServer.ts'),
        import('../observability/logger.ts'),
        import('../observability/credentialGuard.ts'),
        import('../observability/opsAccess.ts'),
        import('../store/db.ts'),
      ]);
      // Read and resolved once, at the console's start; its queue and sessions use this prefix.
      const config = resolveLoadedConfig(loadSettings());
      const { settings } = config;
      const token = settings.HOOKRELAY_CONSOLE_TOKEN;
      if (!token) throw new CliUsageError('set HOOKRELAY_CONSOLE_TOKEN (at least 16 characters, e.g. $(openssl rand -hex 24)) to turn the console on');
      const logger = createLogger({ level: settings.LOG_LEVEL });
      const store = await openCliStore(settings, { create: false });
      const operator = openOperatorQueue(config);
      const host = flags.host ?? DEFAULT_CONSOLE_HOST;
      let port: number | undefined;
      // Without HOOKRELAY_CONSOLE_ORIGIN, browser forms must come from the address it listens on.
      // One token-guess throttle for the console's sign-in and bearer and /readyz's bearer.
      const guard = createCredentialGuard({ logger });
      const app = createConsole({ db: store.db, settings, operator, token, logger, guard, listening: () => (port === undefined ? undefined : { host, port }) });
      const server = await startHttpServer({
        port: flags.port ?? DEFAULT_CONSOLE_PORT,
        host,
        logger,
        handlers: [app.handle],
        ops: opsAccessPolicy({
          allowFrom: settings.HOOKRELAY_OPS_ALLOW_FROM,
          hosts: settings.HOOKRELAY_OPS_HOSTS,
          knownUrls: [settings.HOOKRELAY_CONSOLE_ORIGIN],
        }),
        opsBearer: { token, guard },
        readiness: {
          postgres: async () => {
            await pingStore(store.db);
            return true;
          },
        },
      });
      // Handled once (Q9): npm and npx forward a terminal's Ctrl-C a second time.
      const signals = onStopSignals();
      try {
        if (server.port === undefined)
          throw new CliUsageError(`could not listen on ${host}:${flags.port ?? DEFAULT_CONSOLE_PORT} (in use?): pick another with --port`);
        port = server.port;
        printText(
          `hookrelay console on http://${host.includes(':') ? `[${host}]` : host}:${server.port}/console (sign in with HOOKRELAY_CONSOLE_TOKEN); Ctrl-C stops it\n`,
        );
        await signals.first;
      } finally {
        // Q9: each close is bounded, so an unreachable Redis or Postgres never holds Ctrl-C; the last line says whether all closed.
        const steps: Array<[string, () => Promise<unknown>]> = [
          ['HTTP server', () => server.close()],
          ['console', () => app.close()],
          ['Redis', () => operator.close()],
          ['Postgres', () => store.close()],
        ];
        const gaveUp: string[] = [];
        for (const [name, close] of steps) if (!(await withinCloseTimeout(close()))) gaveUp.push(name);
        signals.dispose();
        if (gaveUp.length === 0) logger.info({ graceful: true }, 'stopped: console closed');
        else {
          process.exitCode = 1;
          logger.warn({ graceful: false, gaveUp }, `stopped uncleanly: console closed; ${gaveUp.join(', ')} did not close within ${CLOSE_STEP_TIMEOUT_MS} ms`);
        }
      }
    });
}
