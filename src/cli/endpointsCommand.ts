/**
 * `hookrelay endpoints …`: its flags, and what each subcommand does once they are checked.
 * Breaker state comes from Redis (the workers' shared gate), disable and limits from Postgres;
 * the command still answers from Postgres when Redis does not. The operator and store modules
 * load only when a subcommand runs.
 */
import type { Command } from 'commander';
import type { CliContext } from './context.ts';
import { CliUsageError } from '../contract/errors.ts';
import { EXIT } from './exitCodes.ts';
import { formatTable, iso, printErrorText, printJson, printJsonArray, printText, shown } from './output.ts';
import { runReplay } from './replayCommand.ts';
import { withDefined } from '../util/withDefined.ts';
import { ALL_TENANTS, canonicalEndpoint, scopedEndpointKey, splitScopedKey } from '../contract/endpoint.ts';
import { DEFAULT_TENANT, TENANT_PATTERN } from '../contract/tenant.ts';

type JsonFlag = { json?: boolean; tenant?: string };

/**
 * N2/N4: the state an operator's argument names: the canonical endpoint of the URL (or of a key as
 * `endpoints list` prints it, `<tenant>|<endpoint>` included) for `--tenant`, else for `fallback`
 * (`*`: every tenant).
 */
function operatorKey(arg: string, tenant: string | undefined, fallback: string): string {
  if (tenant !== undefined && tenant !== ALL_TENANTS && !TENANT_PATTERN.test(tenant))
    throw new CliUsageError('--tenant must be 1–128 characters of A-Z a-z 0-9 . _ : - (or * for every tenant)');
  const printed = splitScopedKey(arg);
  const named = arg.includes('|') && printed.endpoint !== arg ? printed : undefined;
  const endpoint = canonicalEndpoint(named ? named.endpoint : arg);
  return scopedEndpointKey(tenant ?? named?.tenant ?? fallback, endpoint);
}
const TENANT_HELP = 'one tenant (default: every tenant)';

/** How a scoped key is printed: the endpoint, and whose state; the `enable` command that undoes it. */
function described(key: string): { endpoint: string; tenant: string; label: string; enable: string } {
  const { tenant, endpoint } = splitScopedKey(key);
  const label = `${endpoint}${tenant === ALL_TENANTS ? ' (every tenant)' : ` (tenant ${tenant})`}`;
  return { endpoint, tenant, label, enable: `hookrelay endpoints enable ${endpoint}${tenant === ALL_TENANTS ? '' : ` --tenant ${tenant}`}` };
}

/** `hookrelay endpoints …`: the receivers the worker isolates, their breaker state, disable / enable. */
export function registerEndpointsCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  const endpoints = program
    .command('endpoints')
    .description('endpoint isolation: breaker state, in-flight vs cap, failures; disable, enable, limits')
    .addHelpText(
      'after',
      '\nAn endpoint is a webhook URL in canonical form (scheme and host lower-cased, default port dropped, loopback one host, path lower-cased without dot segments, duplicate or trailing slashes, ;params or escaped unreserved characters), or <origin>#<label> when its hook sets webhook.endpoint. Any spelling of one URL names it. Its state is kept per tenant: --tenant names one, else the command applies to every tenant (show: the default tenant).\n\nExamples:\n  hookrelay endpoints list\n  hookrelay endpoints show https://hooks.example.com/agent\n  hookrelay endpoints disable https://hooks.example.com/agent --reason "customer asked"\n  hookrelay endpoints disable https://hooks.example.com/agent --hold --reason "migration: keep everything"\n  hookrelay endpoints enable https://hooks.example.com/agent --replay',
    );

  endpoints
    .command('list')
    .description('every endpoint seen in the last week and every one disabled or limited, most recently used first')
    .option('--json', 'a JSON array, one endpoint per line ([] when none)')
    .action(async (flags: JsonFlag) => {
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => listEndpoints(ctx, flags.json === true));
    });

  endpoints
    .command('show')
    .description('one endpoint: state, counters, limits and its ledger rows by status')
    .argument('<url>', 'endpoint URL or key (see `hookrelay endpoints list`)')
    .option('--tenant <name>', 'one tenant (default: the default tenant)')
    .option('--json', 'one JSON object')
    .action(async (url: string, flags: JsonFlag) => {
      const key = operatorKey(url, flags.tenant, DEFAULT_TENANT);
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => showEndpoint(ctx, key, flags.json === true));
    });

  endpoints
    .command('disable')
    .description(
      'stop delivering to the endpoint: its deliveries are held (status held), not attempted, and fail at their deadlines; with --hold they are kept until you act',
    )
    .argument('<url>', 'endpoint URL or key')
    .option('--tenant <name>', TENANT_HELP)
    .option('--reason <text>', 'why (shown by list and show)', 'disabled by an operator')
    .option('--hold', 'keep every delivery held, with no deadline, until you enable the endpoint and replay them (also on an endpoint already disabled)')
    .option('--wait <seconds>', 'how long to wait for every live worker to apply it (default 10)', (v) => parsePositiveInt(v, '--wait'))
    .option('--json', 'one JSON object')
    .action(async (url: string, flags: JsonFlag & { reason: string; hold?: boolean; wait?: number }) => {
      const key = operatorKey(url, flags.tenant, ALL_TENANTS);
      const { withContext } = await import('./context.ts');
      const code = await withContext((ctx) => disableEndpointCommand(ctx, key, flags.reason, flags.json === true, flags.hold === true, flags.wait));
      if (code !== EXIT.ok) process.exitCode = code;
    });

  endpoints
    .command('enable')
    .description('deliver to the endpoint again (breaker reset to closed); held deliveries stay held unless --replay')
    .argument('<url>', 'endpoint URL or key')
    .option('--tenant <name>', TENANT_HELP)
    .option('--replay', 'also replay its held deliveries (same delivery id and webhook-id)')
    .option('--json', 'one JSON object')
    .action(async (url: string, flags: JsonFlag & { replay?: boolean }) => {
      const key = operatorKey(url, flags.tenant, ALL_TENANTS);
      const { withContext } = await import('./context.ts');
      const code = await withContext((ctx) => enableEndpointCommand(ctx, key, flags.replay === true, flags.json === true));
      if (code !== EXIT.ok) process.exitCode = code;
    });

  endpoints
    .command('limit')
    .description("set or clear the endpoint's own concurrency cap and rate limit (across all workers)")
    .argument('<url>', 'endpoint URL or key')
    .option('--tenant <name>', TENANT_HELP)
    .option('--concurrency <n|default>', 'concurrent attempts (default: HOOKRELAY_ENDPOINT_CONCURRENCY)')
    .option('--rate <n|none>', 'deliveries per second')
    .option(
      '--timeout-floor <seconds|default>',
      "N3: a timeout counts against the endpoint's breaker only when the caller waited at least this long (default: the default webhook timeout, 30 s)",
    )
    .option('--json', 'one JSON object')
    .action(async (url: string, flags: JsonFlag & { concurrency?: string; rate?: string; timeoutFloor?: string }) => {
      if (flags.concurrency === undefined && flags.rate === undefined && flags.timeoutFloor === undefined)
        throw new CliUsageError('give --concurrency, --rate and/or --timeout-floor (see hookrelay endpoints limit --help)');
      const key = operatorKey(url, flags.tenant, ALL_TENANTS);
      const floor = flags.timeoutFloor === undefined ? undefined : flags.timeoutFloor === 'default' ? null : parseFloorMs(flags.timeoutFloor);
      const concurrency =
        flags.concurrency === undefined ? undefined : flags.concurrency === 'default' ? null : parsePositiveInt(flags.concurrency, '--concurrency');
      const rate = flags.rate === undefined ? undefined : flags.rate === 'none' ? null : parseRate(flags.rate);
      const { withContext } = await import('./context.ts');
      await withContext((ctx) => limitEndpointCommand(ctx, key, { concurrency, rateLimit: rate, timeoutFloorMs: floor }, flags.json === true));
    });
}

function parseFloorMs(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 2_147_483)
    throw new CliUsageError(`--timeout-floor must be a number of seconds above 0, or default (got "${value}")`);
  return Math.round(n * 1000);
}

function parseRate(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 100_000)
    throw new CliUsageError(`--rate must be a number of deliveries per second above 0 (at most 100000), or none (got "${value}")`);
  return n;
}

const dash = (v: string | number | null) => (v === null ? '-' : String(v));
const redisDown = 'Redis did not answer at REDIS_URL: breaker state and in-flight counts unknown (shown from Postgres only)\n';

async function listEndpoints(ctx: CliContext, json: boolean): Promise<void> {
  const { listEndpointViews } = await import('../admin/endpointViews.ts');
  const { views, redisUp } = await listEndpointViews(ctx.store.db, ctx.operator, ctx.settings);
  if (json) return printJsonArray(views);
  if (!redisUp) printErrorText(redisDown);
  if (views.length === 0) {
    printText('no endpoints yet: the worker records one the first time it delivers to it\n');
    return;
  }
  printText(
    formatTable(
      ['TENANT', 'ENDPOINT', 'STATE', 'IN FLIGHT', 'LIMIT/CAP', 'RATE/S', 'CONSEC FAILS', 'WINDOW FAIL/ALL', 'LAST SUCCESS', 'LAST FAILURE', 'HELD'],
      views.map((v) => [
        v.tenant === ALL_TENANTS ? '* (all)' : v.tenant,
        v.endpoint,
        v.hold ? 'disabled (hold)' : v.state === 'open' && v.openUntil ? `open until ${v.openUntil}` : v.state,
        dash(v.inFlight),
        v.cap === 0 ? 'none' : `${v.limit ?? v.cap}/${v.cap}`,
        dash(v.rateLimit),
        dash(v.consecutiveFailures),
        // The window counts while closed (an opening starts a new one): never a misleading 0/0 beside an open state.
        v.windowAttempts === null || v.state === 'open' || v.state === 'half_open' ? '-' : `${v.windowFailures}/${v.windowAttempts}`,
        v.lastSuccessAt ?? '-',
        v.lastFailureAt ?? '-',
        String(v.held),
      ]),
    ),
  );
}

async function showEndpoint(ctx: CliContext, key: string, json: boolean): Promise<void> {
  const { getEndpointView } = await import('../admin/endpointViews.ts');
  const found = await getEndpointView(ctx.store.db, ctx.operator, ctx.settings, key);
  if (found === undefined) {
    throw new CliUsageError(`no endpoint "${key}" (not seen by a worker, not disabled or limited, no deliveries); see hookrelay endpoints list`);
  }
  const { view: v, deliveries: counts, redisUp } = found;
  if (json) return printJson({ ...v, deliveries: counts });
  if (!redisUp) printErrorText(redisDown);
  const lines = [
    `${v.key}  ${v.state}${v.state === 'open' && v.openUntil ? ` until ${v.openUntil}` : ''}`,
    `in flight ${dash(v.inFlight)}, limit ${v.cap === 0 ? 'none (no cap)' : `${v.limit ?? v.cap} of cap ${v.cap}`}   rate limit ${v.rateLimit === null ? 'none' : `${v.rateLimit}/s`}`,
    `consecutive failures ${dash(v.consecutiveFailures)}   window ${v.windowAttempts === null ? '-' : `${v.windowFailures} failed of ${v.windowAttempts}`}`,
    `last success ${v.lastSuccessAt ?? '-'}   last failure ${v.lastFailureAt ?? '-'}   failing since ${v.failingSince ?? '-'}`,
    ...(v.disabledAt
      ? [
          `disabled ${v.disabledAt} by ${shown(v.disabledBy ?? '?')}: ${shown(v.disabledReason ?? '')}`,
          v.hold
            ? `hold: its ${v.held} held deliveries are kept (no deadline) until you act: hookrelay endpoints enable ${v.key} --replay`
            : `its ${v.held} held deliveries fail at their deadlines (disable with --hold to keep them)`,
        ]
      : []),
    '',
    Object.keys(counts).length === 0
      ? 'no deliveries in the ledger'
      : formatTable(
          ['STATUS', 'DELIVERIES'],
          Object.entries(counts).map(([s, n]) => [s, String(n)]),
        ).trimEnd(),
  ];
  printText(`${lines.join('\n')}\n`);
}

/**
 * Disable (or put on hold), then wait until every live worker applied it: from the moment this
 * returns 0, no worker admits another delivery to the endpoint. A worker that did not confirm
 * within the bound is named and the exit code is 1 (the change itself stands).
 */
async function disableEndpointCommand(
  ctx: CliContext,
  key: string,
  reason: string,
  json: boolean,
  hold: boolean,
  waitSeconds: number | undefined,
): Promise<number> {
  const [{ disableEndpointByOperator }, { getEndpointPolicy }, { confirmEndpointChange, DEFAULT_CONFIRM_TIMEOUT_MS }] = await Promise.all([
    import('../admin/endpointViews.ts'),
    import('../store/endpointsRepo.ts'),
    import('../admin/policyConfirm.ts'),
  ]);
  const changed = await disableEndpointByOperator(ctx.store.db, key, reason, hold);
  const policy = await getEndpointPolicy(ctx.store.db, splitScopedKey(key));
  const held = policy?.hold === true;
  const timeoutMs = waitSeconds === undefined ? DEFAULT_CONFIRM_TIMEOUT_MS : waitSeconds * 1000;
  const confirmed = changed || hold ? await confirmEndpointChange(ctx.operator, timeoutMs) : undefined;
  const code = (changed || hold) && (confirmed === undefined || confirmed.pending.length > 0) ? EXIT.partial : EXIT.ok;
  const workers = confirmed ? { applied: confirmed.applied.length, pending: confirmed.pending } : null;
  const d = described(key);
  if (json) {
    printJson({
      key: d.endpoint,
      tenant: d.tenant,
      disabled: true,
      changed,
      hold: held,
      disabledAt: iso(policy?.disabledAt),
      reason: policy?.disabledReason ?? reason,
      workers,
    });
    return code;
  }
  const keeps = held
    ? `held with no deadline until you act (--hold); enable it with: ${d.enable} --replay`
    : `held, and failed at their deadlines unless you enable it first: ${d.enable} --replay (disable with --hold to keep them)`;
  const applied =
    confirmed === undefined
      ? ''
      : confirmed.applied.length === 0 && confirmed.pending.length === 0
        ? 'no worker is running now (each applies it when it starts); '
        : confirmed.pending.length === 0
          ? `all ${confirmed.applied.length} live workers applied it: none delivers to it from now on; `
          : '';
  printText(
    changed
      ? `disabled ${d.label}: ${applied}its deliveries are ${keeps}\n`
      : hold
        ? `${d.label} was already disabled (${shown(policy?.disabledBy ?? '?')}: ${shown(policy?.disabledReason ?? '')}); now on hold: ${applied}its deliveries are ${keeps}\n`
        : `${d.label} was already disabled (${shown(policy?.disabledBy ?? '?')}: ${shown(policy?.disabledReason ?? '')}); nothing changed\n`,
  );
  if ((changed || hold) && confirmed === undefined)
    printErrorText(
      'Redis did not answer at REDIS_URL: could not confirm that the workers applied it (they re-read the endpoints table every 2 s); the change is stored\n',
    );
  else if (confirmed && confirmed.pending.length > 0)
    printErrorText(
      `not confirmed within ${timeoutMs / 1000} s by ${confirmed.pending.length} of ${confirmed.applied.length + confirmed.pending.length} live workers (${confirmed.pending.join(', ')}): they may still send to it until they re-read the endpoints table; the change is stored\n`,
    );
  return code;
}

async function enableEndpointCommand(ctx: CliContext, key: string, replay: boolean, json: boolean): Promise<number> {
  const { enableEndpointAndReset } = await import('../admin/endpointViews.ts');
  const { changed, breakerReset, held } = await enableEndpointAndReset(ctx.store.db, ctx.operator, key);
  const reset = breakerReset;
  const d = described(key);
  if (!replay || held === 0) {
    if (json) printJson({ key: d.endpoint, tenant: d.tenant, enabled: true, changed, breakerReset: reset, held });
    else {
      printText(changed ? `enabled ${d.label}\n` : `${d.label} was not disabled; nothing changed\n`);
      if (!reset) printErrorText('Redis did not answer: the breaker was not reset (it closes by itself after its next successful probe)\n');
      if (held > 0) printText(`${held} deliveries are held for it; replay them with: ${d.enable} --replay\n`);
    }
    return EXIT.ok;
  }
  if (!json) printText(`${changed ? 'enabled' : 'already enabled:'} ${d.label}; replaying its ${held} held deliveries\n`);
  return runReplay(ctx, [], {
    status: 'held',
    endpoint: d.endpoint,
    ...(d.tenant === ALL_TENANTS ? {} : { tenant: d.tenant }),
    yes: true,
    ...(json ? { json: true } : {}),
  });
}

async function limitEndpointCommand(
  ctx: CliContext,
  key: string,
  limits: { concurrency: number | null | undefined; rateLimit: number | null | undefined; timeoutFloorMs: number | null | undefined },
  json: boolean,
): Promise<void> {
  const scope = splitScopedKey(key);
  const [{ getEndpointPolicy, setEndpointLimits }, { isolationSettings }] = await Promise.all([
    import('../store/endpointsRepo.ts'),
    import('../isolation/endpointIsolation.ts'),
  ]);
  await setEndpointLimits(ctx.store.db, scope, {
    ...withDefined({ concurrency: limits.concurrency, rateLimit: limits.rateLimit, timeoutFloorMs: limits.timeoutFloorMs }),
  });
  const policy = await getEndpointPolicy(ctx.store.db, scope);
  const cap = policy?.concurrency ?? isolationSettings(ctx.settings).defaultCap;
  if (json)
    return printJson({
      key: scope.endpoint,
      tenant: scope.tenant,
      concurrency: cap,
      ownConcurrency: policy?.concurrency ?? null,
      rateLimit: policy?.rateLimit ?? null,
      timeoutFloorMs: policy?.timeoutFloorMs ?? null,
    });
  printText(
    `${described(key).label}: concurrency ${cap === 0 ? 'no cap' : cap}${policy?.concurrency === null ? ' (default)' : ''}, rate limit ${policy?.rateLimit === null || policy?.rateLimit === undefined ? 'none' : `${policy.rateLimit}/s`}, timeout floor ${policy?.timeoutFloorMs === null || policy?.timeoutFloorMs === undefined ? 'default (30 s)' : `${policy.timeoutFloorMs / 1000} s`}; workers apply it within a few seconds\n`,
  );
}
