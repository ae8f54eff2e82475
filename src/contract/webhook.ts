import { z } from 'zod';
import { DEFAULT_WEBHOOK_TIMEOUT_SECONDS } from './defaults.ts';
import { MAX_ENDPOINT_KEY_LENGTH } from './endpoint.ts';
import { isControlHookType } from './hookTypes.ts';
import { canonicalQStashDestination, qstashDestinationProblem } from './qstashDestination.ts';
import { ENV_VAR_NAME_TOO_LONG_MESSAGE, MAX_ENV_VAR_NAME_LENGTH, reservedTemplateSourceProblem } from './templateSources.ts';

/** The header an ordered delivery carries its per-(operation, hook) sequence in (SEC-H7). */
export const SEQUENCE_HEADER = 'hookrelay-sequence';

/** Largest timeout in seconds: setTimeout's 2^31-1 ms ceiling (W1). */
export const MAX_TIMEOUT_SECONDS = 2_147_483.647;
export const DEFAULT_TIMEOUT_SECONDS = DEFAULT_WEBHOOK_TIMEOUT_SECONDS;

export const ENV_VAR_NAME = /^[A-Z_][A-Z0-9_]*$/;
/** `${NAME}` templates inside header values (W2). */
export const TEMPLATE_PATTERN = /\$\{([^}]*)\}/g;
/** RFC 9110 token characters for a header field name (undici's `isValidHTTPToken`). */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * W1b: hop-by-hop and framing names (undici refuses host/content-length overrides, keep-alive,
 * upgrade, transfer-encoding and expect at send time; te, trailer and connection are hop-by-hop).
 */
const FORBIDDEN_HEADER_NAMES = new Set([
  'host',
  'content-length',
  'connection',
  'transfer-encoding',
  'trailer',
  'upgrade',
  'keep-alive',
  'te',
  'expect',
  // hookrelay's own (an ordered delivery's sequence); a hook may not forge it (SEC-H7).
  SEQUENCE_HEADER,
]);
/** Proxy, browser-reserved, QStash control, and `webhook-*`: hookrelay's own id/timestamp/signature (Q1, Q6); `hookrelay-sequence` is named above. */
const FORBIDDEN_HEADER_PREFIXES = ['proxy-', 'sec-', 'upstash-', 'webhook-'];
/**
 * Anything but HTAB, visible ASCII, space and obs-text (0x80–0xFF): the field-value rule undici
 * applies (`headerCharRegex`), so CR, LF, NUL, other controls, DEL and characters past U+00FF
 * (U+2028 included) are refused before any attempt instead of failing inside the HTTP client.
 */
const UNSAFE_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
export const UNSAFE_HEADER_VALUE_MESSAGE =
  'value contains CR, LF or NUL, or another character HTTP does not allow in a header value (controls, DEL, beyond U+00FF)';

/** W1b: names a caller may never set (hop-by-hop, framing, browser-reserved, QStash control, webhook-*, hookrelay-sequence). */
export function isForbiddenHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return FORBIDDEN_HEADER_NAMES.has(lower) || FORBIDDEN_HEADER_PREFIXES.some((p) => lower.startsWith(p));
}

export function hasUnsafeHeaderValue(value: string): boolean {
  return UNSAFE_HEADER_VALUE.test(value);
}

/** W1b: a header name problem (token syntax, forbidden name), or undefined. */
export function headerNameProblem(name: string): string | undefined {
  if (!HEADER_NAME.test(name)) return 'is not a valid header name';
  if (isForbiddenHeaderName(name)) return 'is a forbidden header name';
  return undefined;
}

/** Template names used in a header value, in order of appearance. */
export function templateNames(value: string): string[] {
  return [...value.matchAll(TEMPLATE_PATTERN)].map((m) => m[1] ?? '');
}

/** Why a value's templates are malformed (W2), the same words at every entry; the text itself is never echoed. */
export const MALFORMED_TEMPLATE_MESSAGE =
  'contains a template that is not a variable name (^[A-Z_][A-Z0-9_]*$) or is malformed (unterminated, empty or nested): write ${NAME}';

/**
 * W2: true when a `${` in the value does not open a well-formed `${NAME}` — unterminated
 * (`${DATABASE_URL`), empty (`${}`), not a name (`${1X}`) or nested (`${${A}}`). Such a value is
 * refused at registration and again before anything resolves at send time.
 */
export function hasMalformedTemplate(value: string): boolean {
  let malformed = false;
  // A space where each template was, so the removal cannot join a `$` and a `{` into a new `${`.
  const rest = value.replace(TEMPLATE_PATTERN, (_match, name: string) => {
    if (!ENV_VAR_NAME.test(name)) malformed = true;
    return ' ';
  });
  return malformed || rest.includes('${');
}

/**
 * W1: an http(s) URL without credentials, or a path starting with exactly one `/`
 * (resolved against APP_URL at send time).
 */
export function checkWebhookUrl(url: string): string | undefined {
  if (url.length === 0) return 'must not be empty';
  if (url.includes('\\')) return 'must not contain a backslash';
  if (url.startsWith('/')) {
    if (url.startsWith('//')) return 'a relative URL must start with exactly one "/"';
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an http(s) URL or a path starting with "/"';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must use http or https';
  if (parsed.username !== '' || parsed.password !== '') return 'must not contain credentials';
  if (parsed.port === '0') return 'must not use port 0';
  return undefined;
}

const WebhookUrlSchema = z.string().superRefine((url, ctx) => {
  const problem = checkWebhookUrl(url);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const TimeoutSchema = z
  .number()
  .refine(Number.isFinite, { message: 'must be a finite number of seconds' })
  .refine((t) => t > 0, { message: 'must be greater than 0' })
  .refine((t) => t <= MAX_TIMEOUT_SECONDS, { message: `must be at most ${MAX_TIMEOUT_SECONDS} seconds` });

/**
 * W1: how deeply a hook `body` may nest objects and arrays. A body is static configuration merged
 * into every payload (whose own limit is MAX_EVENT_DEPTH, 256); 64 levels is far beyond any real
 * body and keeps validation, storage and delivery far from exhausting a stack.
 */
export const MAX_BODY_DEPTH = 64;

/**
 * The body is merged into a JSON payload and persisted with the hook (B1, L2), so it must be
 * plain JSON data. Returns the path and problem of the first non-JSON value, if any (a function,
 * symbol, bigint, non-finite number, class instance or cycle would otherwise be lost or throw
 * later, outside validation).
 */
function jsonProblem(value: unknown, path: (string | number)[], ancestors: Set<object>): { path: (string | number)[]; message: string } | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, message: 'must be a finite number (JSON data only)' };
  if (typeof value !== 'object') return { path, message: `must be JSON data (got ${typeof value})` };
  if (ancestors.has(value)) return { path, message: 'must not contain a cycle' };
  // Checked before descending: the recursion (and every later JSON.stringify) stays bounded.
  if (ancestors.size >= MAX_BODY_DEPTH) return { path, message: `must not nest objects/arrays more than ${MAX_BODY_DEPTH} levels deep` };
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return { path, message: 'must be JSON data (plain objects and arrays only)' };
  ancestors.add(value);
  try {
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    for (const [key, child] of entries) {
      if (child === undefined && !Array.isArray(value)) continue;
      const problem = jsonProblem(child, [...path, key], ancestors);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    ancestors.delete(value);
  }
}

const BodySchema = z.record(z.string(), z.unknown()).superRefine((body, ctx) => {
  const problem = jsonProblem(body, [], new Set());
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

const HeadersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const problem = headerNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
    else if (seen.has(name.toLowerCase()))
      ctx.addIssue({ code: 'custom', path: [name], message: 'is given more than once (header names are case-insensitive)' });
    seen.add(name.toLowerCase());
    if (hasUnsafeHeaderValue(value)) ctx.addIssue({ code: 'custom', path: [name], message: UNSAFE_HEADER_VALUE_MESSAGE });
  }
});

/**
 * W2 at registration: every template names a variable listed in allowedEnvVars, and neither a
 * template nor an allowedEnvVars entry names one of hookrelay's own variables (environment hooks
 * alone may read `AGENT_HOOK_WEBHOOK_*`). The operator's HOOKRELAY_TEMPLATE_ENV pattern is
 * checked where settings are known (`assertTemplateSources`). Messages name variables, never values.
 */
function templateRules(
  w: { headers?: Record<string, string> | undefined; allowedEnvVars?: string[] | undefined },
  ctx: z.RefinementCtx,
  environmentHook: boolean,
): void {
  const allowed = new Set(w.allowedEnvVars ?? []);
  for (const [index, variable] of (w.allowedEnvVars ?? []).entries()) {
    const problem = reservedTemplateSourceProblem(variable, environmentHook);
    if (problem) ctx.addIssue({ code: 'custom', path: ['allowedEnvVars', index], message: problem });
  }
  for (const [name, value] of Object.entries(w.headers ?? {})) {
    // Never echo a malformed template: its text may be a pasted secret.
    if (hasMalformedTemplate(value)) ctx.addIssue({ code: 'custom', path: ['headers', name], message: MALFORMED_TEMPLATE_MESSAGE });
    for (const variable of templateNames(value)) {
      if (!ENV_VAR_NAME.test(variable)) continue; // reported above
      const reserved = reservedTemplateSourceProblem(variable, environmentHook);
      if (reserved) ctx.addIssue({ code: 'custom', path: ['headers', name], message: `template: ${reserved}` });
      else if (!allowed.has(variable))
        ctx.addIssue({ code: 'custom', path: ['headers', name], message: `template \${${variable}} is not listed in allowedEnvVars` });
    }
  }
}

const webhookFields = {
  url: WebhookUrlSchema,
  delivery: z.enum(['fetch', 'qstash']).default('fetch'),
  timeout: TimeoutSchema.default(DEFAULT_TIMEOUT_SECONDS),
  headers: HeadersSchema.optional(),
  allowedEnvVars: z
    .array(
      z.string().max(MAX_ENV_VAR_NAME_LENGTH, { message: ENV_VAR_NAME_TOO_LONG_MESSAGE }).regex(ENV_VAR_NAME, { message: 'must match ^[A-Z_][A-Z0-9_]*$' }),
    )
    .optional(),
  body: BodySchema.optional(),
  eventFields: z.array(z.string()).optional(),
  fallback: z.enum(['fetch', 'none']).default('fetch'),
  responseHandling: z.enum(['ignore', 'toolCall']).default('ignore'),
  onError: z.enum(['continue', 'block']).default('continue'),
  /** A label inside the URL's origin for its isolation state (cap, rate limit, breaker, disable): key `<origin>#<label>`, else origin + path (SEC-H6, endpointKey). */
  endpoint: z
    .string()
    .min(1, { message: 'must not be empty' })
    .max(MAX_ENDPOINT_KEY_LENGTH, { message: `must be at most ${MAX_ENDPOINT_KEY_LENGTH} characters` })
    .regex(/^[\x21-\x7e]+$/, { message: 'must be printable ASCII without spaces' })
    .optional(),
  /** Deliveries per second to this hook's endpoint, across all workers (queued deliveries only). */
  rateLimit: z
    .number()
    .refine(Number.isFinite, { message: 'must be a finite number of deliveries per second' })
    .refine((r) => r > 0, { message: 'must be greater than 0' })
    .refine((r) => r <= 100_000, { message: 'must be at most 100000 per second' })
    .optional(),
  /**
   * `operation` — this hook's deliveries of one operation arrive in the order they were
   * enqueued (a per-(operation, hook) sequence, SEC-H7); `none` opts out of a
   * producer's default. Unset: the producer's default (unordered unless it says so).
   */
  ordering: z.enum(['operation', 'none']).optional(),
  /** Ordered deliveries (SEC-H7): after this delivery fails for good, the next one goes (`continue`, the default) or waits for an operator (`block`). */
  onFailure: z.enum(['continue', 'block']).optional(),
};

function webhookConfigSchema(environmentHook: boolean) {
  return z.strictObject(webhookFields).superRefine((w, ctx) => {
    if (w.responseHandling === 'toolCall') {
      if (w.delivery === 'qstash') ctx.addIssue({ code: 'custom', path: ['delivery'], message: "responseHandling 'toolCall' requires delivery 'fetch'" });
      if (w.body !== undefined) ctx.addIssue({ code: 'custom', path: ['body'], message: "is not allowed with responseHandling 'toolCall'" });
      if (w.eventFields !== undefined) ctx.addIssue({ code: 'custom', path: ['eventFields'], message: "is not allowed with responseHandling 'toolCall'" });
    } else if (w.onError === 'block') {
      ctx.addIssue({ code: 'custom', path: ['onError'], message: "'block' requires responseHandling 'toolCall'" });
    }
    // Ordering is decided by the worker's own send (QStash delivers on its own schedule) and is for notifications.
    if (w.ordering === 'operation') {
      if (w.delivery === 'qstash') ctx.addIssue({ code: 'custom', path: ['ordering'], message: "'operation' requires delivery 'fetch'" });
      if (w.responseHandling === 'toolCall') ctx.addIssue({ code: 'custom', path: ['ordering'], message: "is not allowed with responseHandling 'toolCall'" });
    }
    if (w.delivery === 'qstash') {
      const problem = qstashUrlProblem(w.url);
      if (problem) ctx.addIssue({ code: 'custom', path: ['url'], message: problem });
    }
    templateRules(w, ctx, environmentHook);
  });
}

/**
 * Q5/Q7: a qstash hook's URL must stay one destination inside `/v2/publish/` (no dot segments,
 * userinfo, query or fragment; see qstashDestination.ts). A relative URL is checked as a path
 * here and again, resolved against APP_URL, before each publish.
 */
function qstashUrlProblem(url: string): string | undefined {
  if (checkWebhookUrl(url) !== undefined) return undefined; // the URL rule already reported it
  if (url.startsWith('/')) return qstashDestinationProblem(url);
  const checked = canonicalQStashDestination(url);
  return checked.ok ? undefined : checked.problem;
}

/** The webhook config (W1), strict: unknown keys are rejected; combinations per W1a; templates per W2. */
export const WebhookConfigSchema = webhookConfigSchema(false);
/** The same, for the environment hooks hookrelay builds itself (E3): they alone may read `AGENT_HOOK_WEBHOOK_*`. */
export const EnvironmentWebhookConfigSchema = webhookConfigSchema(true);

/** What callers write (defaults optional). */
export type WebhookConfigInput = z.input<typeof WebhookConfigSchema>;
/** What the library works with (defaults applied). */
export type WebhookConfig = z.output<typeof WebhookConfigSchema>;

/** The webhook's timeout in milliseconds: ceil(seconds × 1000) (W1). */
export function timeoutMs(webhook: Pick<WebhookConfig, 'timeout'>): number {
  return Math.ceil(webhook.timeout * 1000);
}

/** A control webhook on a type that cannot be a control (W1a) is checked where the type is known. */
export function controlTypeProblem(type: string, webhook: Pick<WebhookConfig, 'responseHandling'>): string | undefined {
  if (webhook.responseHandling === 'toolCall' && !isControlHookType(type)) {
    return "responseHandling 'toolCall' is only allowed on beforeToolCall and afterToolCall";
  }
  return undefined;
}
