import type { Command } from 'commander';
import { CliUsageError } from './errors.ts';
import { EXIT } from './exitCodes.ts';

type JsonFlag = { json?: boolean };

/** `hookrelay endpoints …`: the receivers the worker isolates, their breaker state, disable / enable. */
export function registerEndpointsCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  const endpoints = program
    .command('endpoints')
    .description('endpoint isolation: breaker state, in-flight vs cap, failures; disable, enable, limits')
    .addHelpText(
      'after',
      '\nAn endpoint is a webhook URL\'s origin + path, or the key its hook names (webhook.endpoint).\n\nExamples:\n  hookrelay endpoints list\n  hookrelay endpoints show https://hooks.example.com/agent\n  hookrelay endpoints disable https://hooks.example.com/agent --reason "customer asked"\n  hookrelay endpoints disable https://hooks.example.com/agent --hold --reason "migration: keep everything"\n  hookrelay endpoints enable https://hooks.example.com/agent --replay',
    );

  endpoints
    .command('list')
    .description('every endpoint seen in the last week and every one disabled or limited, most recently used first')
    .option('--json', 'a JSON array, one endpoint per line ([] when none)')
    .action(async (flags: JsonFlag) => {
      const { listEndpoints } = await import('./endpointsRun.ts');
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => listEndpoints(ctx, flags.json === true));
    });

  endpoints
    .command('show')
    .description('one endpoint: state, counters, limits and its ledger rows by status')
    .argument('<key>', 'endpoint key (see `hookrelay endpoints list`)')
    .option('--json', 'one JSON object')
    .action(async (key: string, flags: JsonFlag) => {
      const { showEndpoint } = await import('./endpointsRun.ts');
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => showEndpoint(ctx, key, flags.json === true));
    });

  endpoints
    .command('disable')
    .description(
      'stop delivering to the endpoint: its deliveries are held (status held), not attempted, and fail at their deadlines; with --hold they are kept until you act',
    )
    .argument('<key>', 'endpoint key')
    .option('--reason <text>', 'why (shown by list and show)', 'disabled by an operator')
    .option('--hold', 'keep every delivery held, with no deadline, until you enable the endpoint and replay them (also on an endpoint already disabled)')
    .option('--json', 'one JSON object')
    .action(async (key: string, flags: JsonFlag & { reason: string; hold?: boolean }) => {
      const { disableEndpointCommand } = await import('./endpointsRun.ts');
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => disableEndpointCommand(ctx, key, flags.reason, flags.json === true, flags.hold === true));
    });

  endpoints
    .command('enable')
    .description('deliver to the endpoint again (breaker reset to closed); held deliveries stay held unless --replay')
    .argument('<key>', 'endpoint key')
    .option('--replay', 'also replay its held deliveries (same delivery id and webhook-id)')
    .option('--json', 'one JSON object')
    .action(async (key: string, flags: JsonFlag & { replay?: boolean }) => {
      const { enableEndpointCommand } = await import('./endpointsRun.ts');
      const { withContext } = await import('./context.ts');
      const code = await withContext((ctx) => enableEndpointCommand(ctx, key, flags.replay === true, flags.json === true));
      if (code !== EXIT.ok) process.exitCode = code;
    });

  endpoints
    .command('limit')
    .description("set or clear the endpoint's own concurrency cap and rate limit (across all workers)")
    .argument('<key>', 'endpoint key')
    .option('--concurrency <n|default>', 'concurrent attempts (default: HOOKRELAY_ENDPOINT_CONCURRENCY)')
    .option('--rate <n|none>', 'deliveries per second')
    .option('--json', 'one JSON object')
    .action(async (key: string, flags: JsonFlag & { concurrency?: string; rate?: string }) => {
      if (flags.concurrency === undefined && flags.rate === undefined)
        throw new CliUsageError('give --concurrency and/or --rate (see hookrelay endpoints limit --help)');
      const concurrency =
        flags.concurrency === undefined ? undefined : flags.concurrency === 'default' ? null : parsePositiveInt(flags.concurrency, '--concurrency');
      const rate = flags.rate === undefined ? undefined : flags.rate === 'none' ? null : parseRate(flags.rate);
      const { limitEndpointCommand } = await import('./endpointsRun.ts');
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => limitEndpointCommand(ctx, key, { concurrency, rateLimit: rate }, flags.json === true));
    });
}

function parseRate(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 100_000)
    throw new CliUsageError(`--rate must be a number of deliveries per second above 0 (at most 100000), or none (got "${value}")`);
  return n;
}
