/**
 * What each variable means, its default and who reads it: the one place `.env.example` and the
 * table in docs/configuration.md are generated from (`npm run config:docs`; test DEP-5 fails when
 * either drifts). Keyed by the settings schema's names, so a setting without an entry does not
 * compile; the schema (settings.ts) holds the rules, this file the words.
 */
import * as D from '../contract/defaults.ts';
import { DEFAULT_TEMPLATE_ENV } from '../contract/templateSources.ts';
import type { SettingName } from './settings.ts';

/** The groups of `.env.example`, in order. */
export const ENV_SECTIONS = {
  compose: 'Required by docker-compose.yml (compose refuses to start without them)',
  connections: 'Connections',
  isolation: "Endpoint isolation (one receiver's outage never delays the others)",
  worker: 'Worker',
  safety: 'Delivery safety',
  console: 'Operator console (optional; docs/console.md)',
  approvals: 'Approvals (optional; docs/approvals.md)',
  otel: 'OpenTelemetry traces (optional; needs `npm install @opentelemetry/sdk-node`)',
  qstash: 'QStash (optional)',
  envHooks: 'Environment hooks (docs/decisions.md)',
} as const;
export type EnvSection = keyof typeof ENV_SECTIONS;

export type VariableDoc = {
  /**
   * @defaultValue the value used when the variable is unset, as it would be written in the
   * environment; `undefined`: unset means "not given" (the feature is off, or `defaultNote` says).
   */
  defaultValue: string | undefined;
  /** The table's default cell when the bare value is not the whole story (markdown). */
  defaultNote?: string;
  /** The table's meaning cell (markdown). */
  meaning: string;
  /** Who reads it and when (markdown); `undefined` for variables hookrelay itself does not read. */
  readBy?: string;
  section: EnvSection;
  /** `.env.example` comment lines above the variable (plain text). */
  comment: readonly string[];
  /** The value `.env.example` shows (default: `defaultValue`, else empty). */
  example?: string;
  /** `.env.example` writes `NAME=value`, not `# NAME=value` (the compose passwords). */
  required?: boolean;
};

const code = (v: string | number) => `\`${v}\``;

/** Every setting of the schema. */
export const SETTING_DOCS: { readonly [K in SettingName]: VariableDoc } = {
  DATABASE_URL: {
    defaultValue: undefined,
    defaultNote: 'unset → the embedded store',
    meaning:
      'Postgres connection string: a `postgres://` or `postgresql://` URL with a host (`postgres://user:password@host:5432/database`), or `postgres:///database?host=/socket/folder`',
    readBy: 'worker, CLI, producer, operation store',
    section: 'connections',
    comment: [
      'docker-compose.yml builds DATABASE_URL and REDIS_URL from the passwords above, for the containers.',
      'A server app or the CLI on the host uses the published ports (bound to 127.0.0.1).',
      'Unset outside compose: the embedded PGlite store in HOOKRELAY_DATA_DIR.',
    ],
    example: 'postgres://hookrelay:<POSTGRES_PASSWORD>@127.0.0.1:5432/hookrelay',
  },
  HOOKRELAY_DATA_DIR: {
    defaultValue: D.DEFAULT_DATA_DIR,
    meaning: "folder of the embedded store (and of a private `redis-server` started by `hookrelay start`), and of the producer's local spool (`spool/`, F1)",
    readBy: "same, when `DATABASE_URL` is unset; the producer for its spool always; the worker and `hookrelay stats` read the spool's size from it",
    section: 'connections',
    comment: [
      'Folder of the embedded store, of a private redis-server (`hookrelay start` without DATABASE_URL)',
      "and of the producer's spool; the image sets /app/.hookrelay.",
    ],
  },
  REDIS_URL: {
    defaultValue: D.DEFAULT_REDIS_URL,
    meaning: "BullMQ's Redis: a `redis://` or `rediss://` URL, port 1–65535, an optional db number (`redis://:password@host:6379/0`)",
    readBy: 'worker, CLI, producer',
    section: 'connections',
    comment: ['redis:// or rediss://, a db index is allowed; with compose, on the host:'],
    example: 'redis://:<REDIS_PASSWORD>@127.0.0.1:6379',
  },
  HOOKRELAY_QUEUE: {
    defaultValue: D.DEFAULT_QUEUE_NAME,
    meaning: 'queue name (letters, digits, `-`, `_`)',
    readBy: 'worker, CLI, producer',
    section: 'connections',
    comment: ["Queue name (letters, digits, - and _); the server app's producer must use the same."],
  },
  HOOKRELAY_QUEUE_PREFIX: {
    defaultValue: D.DEFAULT_QUEUE_PREFIX,
    meaning: "BullMQ's key prefix; with `HOOKRELAY_REDIS_CLUSTER=true` it must be a hash tag such as `{hookrelay}`",
    readBy: 'worker, producer, CLI',
    section: 'connections',
    comment: ['BullMQ key prefix (server app, workers and CLI must agree); a hash tag such as {hookrelay} on Redis Cluster.'],
  },
  HOOKRELAY_REDIS_CLUSTER: {
    defaultValue: 'false',
    meaning: '`true`: `REDIS_URL` is a seed node of a Redis Cluster',
    readBy: 'worker, producer, CLI',
    section: 'connections',
    comment: ['true: REDIS_URL is a seed node of a Redis Cluster (then HOOKRELAY_QUEUE_PREFIX must be a hash tag).'],
  },
  HOOKRELAY_ENDPOINT_ISOLATION: {
    defaultValue: 'true',
    meaning: '`false` turns endpoint isolation off: no per-endpoint cap, rate limit, breaker or disable ([endpoints](delivery.md#endpoint-isolation))',
    readBy: 'worker',
    section: 'isolation',
    comment: ['false turns endpoint isolation off.'],
  },
  HOOKRELAY_ENDPOINT_CONCURRENCY: {
    defaultValue: String(D.DEFAULT_ENDPOINT_CONCURRENCY),
    meaning:
      "a fixed ceiling on concurrent attempts per endpoint across all workers and all tenants, shared fairly among tenants; `0` = none: the adaptive limit alone (starts at 4, +1 per fast success, halved per failure; docs/delivery.md); `hookrelay endpoints limit` sets one endpoint's own",
    readBy: 'worker',
    section: 'isolation',
    comment: [
      'A fixed ceiling on concurrent attempts per endpoint across all workers and all tenants, shared',
      'fairly among tenants; 0 = none (the adaptive limit alone: starts at 4, +1 per fast success,',
      'halved per failure).',
    ],
  },
  HOOKRELAY_BREAKER_FAILURES: {
    defaultValue: '5',
    meaning: "consecutive failures (timeouts, network errors, HTTP errors) that open an endpoint's circuit breaker",
    readBy: 'worker',
    section: 'isolation',
    comment: ["Consecutive failures that open an endpoint's breaker, and its first open period (ms)."],
  },
  HOOKRELAY_BREAKER_COOLDOWN_MS: {
    defaultValue: '10000',
    meaning: 'how long a breaker stays open before one probe goes out; doubled after each failed probe, up to 5 minutes',
    readBy: 'worker',
    section: 'isolation',
    comment: [],
  },
  HOOKRELAY_ENDPOINT_AUTO_DISABLE_HOURS: {
    defaultValue: '24',
    meaning: 'hours without a successful delivery, while failing, after which an endpoint is disabled; `0` = never',
    readBy: 'worker',
    section: 'isolation',
    comment: ['Hours without a success (while failing) before an endpoint is disabled (0 = never).'],
  },
  APP_URL: {
    defaultValue: undefined,
    meaning: 'http(s) base for relative hook URLs',
    readBy: 'dispatcher (at construction), worker, remote interceptors',
    section: 'safety',
    comment: ['http(s) base for relative hook URLs.'],
    example: 'https://app.example.com',
  },
  HOOKRELAY_ALLOWED_CIDRS: {
    defaultValue: undefined,
    meaning:
      "comma-separated IPv4/IPv6 CIDRs the SSRF guard lets through (`10.0.0.0/8,127.0.0.1/32,fd00::/8`; a bare address without `/bits` is refused, naming the entry's position); an `ssrf_blocked` failure names this variable",
    readBy: 'dispatcher (at construction), worker, remote interceptors (at creation)',
    section: 'safety',
    comment: ['Comma-separated CIDRs the SSRF guard lets through (private receivers).'],
    example: '10.0.0.0/8',
  },
  HOOKRELAY_SIGNING_SECRETS: {
    defaultValue: undefined,
    meaning: 'space-separated `whsec_<base64>` secrets (24–64 bytes each); every attempt is signed with each',
    readBy: 'dispatcher (at each send), worker (at start), remote interceptors (at each call)',
    section: 'safety',
    comment: ['Space-separated whsec_<base64> secrets (24-64 bytes each); every attempt is signed with each.'],
    example: 'whsec_...',
  },
  HOOKRELAY_RETRY_SCHEDULE: {
    defaultValue: D.DEFAULT_RETRY_SCHEDULE_SECONDS.join(','),
    meaning: 'comma-separated delays in seconds between attempts (±20 % jitter); attempts = length + 1',
    readBy: 'worker',
    section: 'worker',
    comment: ['Seconds between attempts, comma-separated (±20 % jitter); attempts = length + 1.'],
  },
  HOOKRELAY_CONCURRENCY: {
    defaultValue: String(D.DEFAULT_CONCURRENCY),
    meaning:
      'deliveries in progress at once (1–10000); BullMQ runs twice as many jobs, the rest waiting in memory for a slot of the worker or of their endpoint (docs/delivery.md, Waiting for a slot)',
    readBy: 'worker',
    section: 'worker',
    comment: ['Deliveries in progress at once (1-10000).'],
  },
  HOOKRELAY_MAX_PAYLOAD_BYTES: {
    defaultValue: String(D.DEFAULT_MAX_PAYLOAD_BYTES),
    meaning: 'largest event accepted at enqueue',
    readBy: 'producer',
    section: 'worker',
    comment: ['Largest event accepted at enqueue, bytes (read by the producer and the CLI).'],
  },
  HOOKRELAY_SPOOL_MAX_BYTES: {
    defaultValue: String(D.DEFAULT_SPOOL_MAX_BYTES),
    defaultNote: `${code(D.DEFAULT_SPOOL_MAX_BYTES)} (64 MiB)`,
    meaning:
      "the producer's local spool for events Postgres cannot take, in bytes; `0` turns it off ([delivery.md](delivery.md#the-front-door-accepted-or-told-f1f2))",
    readBy: 'producer',
    section: 'worker',
    comment: ["The producer's local spool for events Postgres cannot take, bytes (0 = off; read by the producer)."],
  },
  HOOKRELAY_RECONCILE_INTERVAL_MS: {
    defaultValue: String(D.DEFAULT_RECONCILE_INTERVAL_MS),
    meaning: 'reconciler period (≥ 100)',
    readBy: 'worker',
    section: 'worker',
    comment: ['Reconciler period, ms (>= 100).'],
  },
  HOOKRELAY_LOCK_DURATION_MS: {
    defaultValue: String(D.DEFAULT_LOCK_DURATION_MS),
    meaning: "BullMQ job lock; also added to the webhook timeout to form a delivery's lease (≥ 100)",
    readBy: 'worker',
    section: 'worker',
    comment: ["BullMQ job lock, ms (>= 100); added to the webhook timeout to form a delivery's lease."],
  },
  HOOKRELAY_STALLED_INTERVAL_MS: {
    defaultValue: String(D.DEFAULT_STALLED_INTERVAL_MS),
    meaning: 'BullMQ stalled-job check (≥ 100)',
    readBy: 'worker',
    section: 'worker',
    comment: ['BullMQ stalled-job check, ms (>= 100).'],
  },
  HOOKRELAY_SHUTDOWN_TIMEOUT_MS: {
    defaultValue: String(D.DEFAULT_SHUTDOWN_TIMEOUT_MS),
    meaning: 'how long a stopping worker lets in-flight deliveries finish (≥ 0)',
    readBy: 'worker',
    section: 'worker',
    comment: ['How long a stopping worker lets in-flight deliveries finish, ms. Keep it under the compose', 'stop_grace_period (35 s).'],
  },
  HOOKRELAY_HTTP_PORT: {
    defaultValue: String(D.DEFAULT_HTTP_PORT),
    meaning: 'worker HTTP server (health, readiness, metrics, QStash callbacks); `0` = any free port; a busy port is logged and delivery goes on',
    readBy: 'worker',
    section: 'worker',
    comment: [
      'Worker HTTP server (/healthz, /readyz, /metrics, QStash callbacks); 0 = any free port.',
      'docker-compose.yml fixes it to 8787 (published on 127.0.0.1:8787).',
    ],
  },
  HOOKRELAY_PUBLIC_URL: {
    defaultValue: undefined,
    meaning:
      "the worker's public http(s) base URL; when set, QStash publishes ask for callbacks there, and answer tokens in `approval.requested` name `<url>/approvals/answer`",
    readBy: 'worker',
    section: 'qstash',
    comment: [
      "The worker's public http(s) base URL; when set, QStash publishes ask for callbacks there",
      '(needs both signing keys below, and a proxy that reaches 127.0.0.1:8787).',
    ],
    example: 'https://hooks.example.com',
  },
  HOOKRELAY_OPS_ALLOW_FROM: {
    defaultValue: 'loopback',
    meaning:
      "who may read `/metrics` and `/readyz` without a credential: `loopback` (this machine), `any`, or comma-separated CIDRs (`10.0.0.0/8,fd00::/8`; loopback always included). A request relayed by a proxy (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`) is never judged by the proxy's address. With `HOOKRELAY_CONSOLE_TOKEN` set, `Authorization: Bearer <token>` reads them from anywhere. `/healthz` answers everyone — see [observability.md](observability.md#who-may-read-metrics-and-readyz) (**since 0.3.0**: before, every interface)",
    readBy: 'worker (at start), `hookrelay console`',
    section: 'worker',
    comment: [
      'Who may read /metrics and /readyz without a credential: loopback (default), any, or',
      'comma-separated CIDRs (loopback always included). With HOOKRELAY_CONSOLE_TOKEN set, a bearer of',
      'it may read them from anywhere. /healthz answers everyone.',
    ],
    example: '10.0.0.0/8',
  },
  HOOKRELAY_METRICS_TENANTS: {
    defaultValue: 'default',
    meaning:
      'the tenants `hookrelay_tenant_deliveries_total` names in its `tenant` label, comma-separated (at most 50); every other tenant counts as `other`, so the label stays bounded',
    readBy: 'worker',
    section: 'worker',
    comment: ['Tenants named in the tenant label of hookrelay_tenant_deliveries_total (at most 50);', 'every other tenant counts as "other".'],
    example: 'default,acme,globex',
  },
  HOOKRELAY_OPS_HOSTS: {
    defaultValue: undefined,
    defaultNote: 'unset: `localhost`, IP literals and the hosts of `HOOKRELAY_PUBLIC_URL` and `HOOKRELAY_CONSOLE_ORIGIN`',
    meaning: 'more host names `/metrics` and `/readyz` answer to (the `Host` header, against DNS rebinding), comma-separated; `*` answers any name',
    readBy: 'worker (at start), `hookrelay console`',
    section: 'worker',
    comment: [
      'Host names /metrics and /readyz answer to (DNS-rebinding check), besides localhost, IP literals',
      'and the hosts of HOOKRELAY_PUBLIC_URL and HOOKRELAY_CONSOLE_ORIGIN; * = any.',
    ],
    example: 'hookrelay-worker.monitoring.svc',
  },
  HOOKRELAY_RETENTION_DAYS: {
    defaultValue: String(D.DEFAULT_RETENTION_DAYS),
    meaning: 'age after which finished deliveries lose payload and attempts (1–36500)',
    readBy: 'worker',
    section: 'worker',
    comment: ['Days after which finished deliveries lose payload and attempts (>= 1).'],
  },
  HOOKRELAY_RETENTION_DELETE_DAYS: {
    defaultValue: undefined,
    meaning:
      'age after which finished deliveries (`delivered`, `failed`, `accepted_by_qstash`) are deleted outright, metadata too, so the ledger stays bounded (≥ 1); unset keeps their metadata',
    readBy: 'worker',
    section: 'worker',
    comment: ['Days after which finished deliveries are deleted, metadata and all (>= 1). Unset: their metadata is kept forever.'],
    example: '180',
  },
  HOOKRELAY_MIGRATE: {
    defaultValue: 'true',
    meaning:
      '`false` (or `0`; `true` / `1`, any case): the worker starts without applying the migrations, for deployments that run `hookrelay migrate` as a separate job ([delivery.md](delivery.md#migrations)); `--no-migrate` on `start` / `worker` and `startDeliveryWorker({ migrate: false })` do the same',
    readBy: 'worker (at start)',
    section: 'worker',
    comment: ['false: the worker starts without migrating (docker-compose.yml sets false: its `migrate` job owns the schema).'],
  },
  HOOKRELAY_TEMPLATE_ENV: {
    defaultValue: DEFAULT_TEMPLATE_ENV,
    defaultNote: '`none` (no template may read any variable: deny by default; **changed in 0.3.0**, it was `*`)',
    meaning:
      "which variables `${NAME}` header templates of caller hooks may read: comma-separated names with `*` globs (`HOOK_*,BILLING_TOKEN`), `*` for every name not reserved, or `none`. Reserved names never can, whatever it says: `DATABASE_URL`, `NODE_OPTIONS`, `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, `ALL_PROXY` (lower-case too), and every name starting with `PG`, `POSTGRES_`, `REDIS`, `QSTASH`, `UPSTASH_`, `HOOKRELAY_`, `OTEL_`, `OPENAI_`, `AGENT_HOOK_WEBHOOK_`, `AWS_`, `GOOGLE_` or `AZURE_` — hookrelay's own settings, those its SDKs and deployment files read (node-postgres, the Postgres image, Redis, QStash and Upstash, OpenTelemetry, the OpenAI SDKs the integrations run in-process, Node, HTTP proxies) and cloud credentials (only the environment hooks read their own `AGENT_HOOK_WEBHOOK_TOKEN`); an entry that can only match reserved names, or longer than 128 characters, is an error; globs match in linear time ([webhooks.md](webhooks.md#header-templates-w2)). Each factory's `templateEnv` option overrides it",
    readBy:
      'dispatcher (at construction, from its `env`), producer, operation store and remote interceptors (at creation), worker and CLI (at start); checked at registration and again at each send',
    section: 'safety',
    comment: [
      'Which variables ${NAME} header templates may read: names with * globs, `*`, or `none`.',
      "Default none (deny by default, since 0.3.0): list the names your hooks' templates use.",
      'Never templatable, whatever it says: DATABASE_URL, NODE_OPTIONS, HTTP_PROXY, HTTPS_PROXY,',
      'NO_PROXY, ALL_PROXY, PG*, POSTGRES_*, REDIS*, QSTASH*, UPSTASH_*, HOOKRELAY_*, OTEL_*, OPENAI_*,',
      'AGENT_HOOK_WEBHOOK_*, AWS_*, GOOGLE_*, AZURE_*.',
    ],
    example: 'HOOK_*',
  },
  HOOKRELAY_CONSOLE_TOKEN: {
    defaultValue: undefined,
    defaultNote: 'unset (no console)',
    meaning:
      "turns the operator console on: `/console` on the worker's HTTP server, and `hookrelay console`; the token operators sign in with (≥ 16 characters, e.g. `openssl rand -hex 24`) — see [console.md](console.md)",
    readBy: 'worker (at start), `hookrelay console`',
    section: 'console',
    comment: [
      'Set it to serve the console at http://127.0.0.1:8787/console (and for `hookrelay console`):',
      'the token operators sign in with, at least 16 characters (openssl rand -hex 24). Unset: no console.',
    ],
  },
  HOOKRELAY_CONSOLE_ORIGIN: {
    defaultValue: undefined,
    defaultNote:
      'the address the console listens on: `http://127.0.0.1:<port>` (also `http://localhost:<port>`, `http://[::1]:<port>`) when bound to loopback or every interface, else `http://<host>:<port>`',
    meaning:
      "the console's public origin as the browser's address bar shows it (`https://console.example.com`: scheme, host, port — no path, query or credentials). Sign-in and every change (replay, disable, enable, sign out) from a browser must carry this `Origin`; the request's own `Host` header is never trusted. An `https` origin also makes the session cookie `Secure`. Set it when a reverse proxy serves the console — see [console.md](console.md#sessions-and-origin)",
    readBy: 'worker (at start), `hookrelay console`',
    section: 'console',
    comment: [
      "The console's public origin (what the browser's address bar shows); browser forms must come",
      'from it. Default: the address it listens on (http://127.0.0.1:8787 here). Set it behind a proxy;',
      'an https origin makes the session cookie Secure.',
    ],
    example: 'https://console.example.com',
  },
  HOOKRELAY_CONSOLE_IDLE_TIMEOUT: {
    defaultValue: '30m',
    meaning: 'a console sign-in session ends after this long without a request: `90s`, `30m`, `2h`, `1d` or bare seconds, 1 minute to 30 days',
    readBy: 'worker (at start), `hookrelay console`',
    section: 'console',
    comment: ['Sign-in sessions (kept in Redis) end after this long idle, and this long after sign-in.'],
  },
  HOOKRELAY_CONSOLE_SESSION_MAX_AGE: {
    defaultValue: '12h',
    meaning: "a console session ends this long after sign-in however busy (same syntax and range); also the cookie's `Max-Age`",
    readBy: 'worker (at start), `hookrelay console`',
    section: 'console',
    comment: [],
  },
  HOOKRELAY_APPROVER_URL: {
    defaultValue: undefined,
    meaning:
      "an http(s) URL that receives `approval.requested` and `approval.resolved` (beside the operations' hooks subscribed to them), through the ledger and signed like every delivery — see [approvals.md](approvals.md)",
    readBy: 'worker',
    section: 'approvals',
    comment: ['Where approval.requested / approval.resolved go (signed like every delivery).'],
    example: 'https://approvals.example.com/hookrelay',
  },
  HOOKRELAY_APPROVAL_SECRETS: {
    defaultValue: undefined,
    defaultNote: 'unset (no answer endpoint)',
    meaning:
      'space-separated secrets, ≥ 32 characters each (`openssl rand -hex 32`), that sign the single-use answer tokens of chat buttons: the first signs, any verifies (rotation). Set, the worker serves `POST /approvals/answer` and `approval.requested` carries an approve and a reject token — see [approvals.md](approvals.md#answer-tokens)',
    readBy: 'worker (at start)',
    section: 'approvals',
    comment: [
      'Secrets (>= 32 characters, space-separated for rotation) signing the answer tokens of chat',
      'buttons; set, the worker serves POST /approvals/answer (openssl rand -hex 32).',
    ],
  },
  HOOKRELAY_APPROVAL_SWEEP_MS: {
    defaultValue: String(D.DEFAULT_APPROVAL_SWEEP_MS),
    meaning: 'how often the worker expires pending approvals past their expiry and enqueues the approval events nobody announced yet (≥ 100)',
    readBy: 'worker',
    section: 'approvals',
    comment: ['How often the worker expires approvals and announces their events (ms).'],
  },
  LOG_LEVEL: {
    defaultValue: D.DEFAULT_LOG_LEVEL,
    defaultNote: '`info` (worker, CLI); `warn` (library)',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`',
    readBy: 'worker, CLI, dispatcher',
    section: 'safety',
    comment: ['fatal, error, warn, info, debug, trace, silent.'],
  },
  QSTASH_URL: {
    defaultValue: undefined,
    defaultNote: '`https://qstash.upstash.io`',
    meaning: 'QStash endpoint (http(s))',
    readBy: 'worker (at start), local-mode dispatcher (at send)',
    section: 'qstash',
    comment: ['QStash endpoint (default https://qstash.upstash.io).'],
    example: 'https://qstash.upstash.io',
  },
  QSTASH_TOKEN: {
    defaultValue: undefined,
    meaning: "QStash token; without it a `qstash` hook falls back to one direct fetch (or fails with `configuration` under `fallback: 'none'`)",
    readBy: 'worker (at start), local-mode dispatcher (at send)',
    section: 'qstash',
    comment: ['Without a token a `qstash` hook falls back to one direct fetch.'],
  },
  QSTASH_CURRENT_SIGNING_KEY: {
    defaultValue: undefined,
    meaning: 'verifies QStash callbacks (both keys required)',
    readBy: 'worker',
    section: 'qstash',
    comment: [],
  },
  QSTASH_NEXT_SIGNING_KEY: {
    defaultValue: undefined,
    meaning: 'verifies QStash callbacks (both keys required)',
    readBy: 'worker',
    section: 'qstash',
    comment: [],
  },
};

/** Variables that are no setting of the schema but belong in `.env.example` and the table. */
export const OTHER_VARIABLE_DOCS: Readonly<Record<string, VariableDoc>> = {
  POSTGRES_PASSWORD: {
    defaultValue: undefined,
    meaning: 'docker-compose.yml only: the Postgres password (inside `DATABASE_URL` of the containers)',
    section: 'compose',
    comment: ['Used inside DATABASE_URL / REDIS_URL: pick URL-safe values, e.g. `openssl rand -hex 24`.'],
    required: true,
  },
  REDIS_PASSWORD: { defaultValue: undefined, meaning: 'docker-compose.yml only: the Redis password', section: 'compose', comment: [], required: true },
  POSTGRES_USER: { defaultValue: 'hookrelay', meaning: 'docker-compose.yml only: the Postgres user', section: 'compose', comment: [] },
  POSTGRES_DB: { defaultValue: 'hookrelay', meaning: 'docker-compose.yml only: the Postgres database', section: 'compose', comment: [] },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    defaultValue: undefined,
    meaning:
      'set (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_TRACES_EXPORTER`): `hookrelay worker` / `start` start the optional `@opentelemetry/sdk-node` ([observability.md](observability.md#traces-opentelemetry))',
    readBy: 'worker (at start); the library reads no `OTEL_*` variable',
    section: 'otel',
    comment: [
      'The worker exports spans when an OTLP endpoint (or OTEL_TRACES_EXPORTER) is set; every standard',
      'OTEL_* variable applies. docs/observability.md.',
    ],
    example: 'http://127.0.0.1:4318',
  },
  OTEL_SERVICE_NAME: {
    defaultValue: 'hookrelay-worker',
    meaning: "the worker's service name in traces (hookrelay defaults it; `OTEL_METRICS_EXPORTER` / `OTEL_LOGS_EXPORTER` default to `none`)",
    readBy: 'worker (its OpenTelemetry SDK)',
    section: 'otel',
    comment: [],
  },
  AGENT_HOOK_WEBHOOK_URL: {
    defaultValue: undefined,
    meaning: 'environment hook: the URL every subscribed event goes to ([decisions.md](decisions.md#environment-hooks-e))',
    readBy: 'dispatcher (at each dispatch and evaluation)',
    section: 'envHooks',
    comment: ["The worker reads only the token (at each attempt); the server app's dispatcher reads all five."],
    example: 'https://policy.example.com/hook',
  },
  AGENT_HOOK_WEBHOOK_TOKEN: {
    defaultValue: undefined,
    meaning: 'environment hook: the bearer token (required with the URL; kept as a template, resolved at send)',
    readBy: 'dispatcher, worker (at each attempt)',
    section: 'envHooks',
    comment: [],
  },
  AGENT_HOOK_WEBHOOK_EVENTS: {
    defaultValue: undefined,
    defaultNote: 'unset: every hook type',
    meaning: 'environment hook: comma-separated hook types it subscribes to',
    readBy: 'dispatcher',
    section: 'envHooks',
    comment: [],
    example: 'beforeToolCall,afterToolCall',
  },
  AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING: {
    defaultValue: undefined,
    meaning: 'environment hook: `toolCall` makes its before/afterToolCall hooks decision webhooks',
    readBy: 'dispatcher',
    section: 'envHooks',
    comment: [],
    example: 'toolCall',
  },
  AGENT_HOOK_WEBHOOK_ON_ERROR: {
    defaultValue: undefined,
    meaning: 'environment hook: `block` or `continue` when a decision call fails',
    readBy: 'dispatcher',
    section: 'envHooks',
    comment: [],
    example: 'block',
  },
};

/**
 * Variables read in code that are neither settings nor documented above, each with why: a test
 * (DEP-5) fails on an environment read of a name missing from the schema and from these lists.
 */
export const UNDOCUMENTED_ENV_READS: Readonly<Record<string, string>> = {
  PATH: 'looking for `redis-server` to start a private one (`hookrelay start`)',
  OTEL_SDK_DISABLED: "the OpenTelemetry SDK's own switch, honoured before starting it (docs/observability.md)",
  OTEL_TRACES_EXPORTER: "the OpenTelemetry SDK's own (docs/observability.md)",
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "the OpenTelemetry SDK's own (docs/observability.md)",
  OTEL_METRICS_EXPORTER: 'defaulted to `none` for the SDK (docs/observability.md)',
  OTEL_LOGS_EXPORTER: 'defaulted to `none` for the SDK (docs/observability.md)',
};
