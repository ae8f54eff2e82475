/**
 * W2: which environment variables a `${NAME}` header template may read.
 *
 * Two rules, both checked at registration and again at send time:
 * - reserved names are never a template source, whoever wrote the hook and whatever the operator
 *   allows (static): hookrelay's own variables and those its SDKs read (Postgres, Redis, QStash,
 *   OpenTelemetry, Node) and the cloud credential families; the `AGENT_HOOK_WEBHOOK_*` ones only
 *   for the environment hooks built from them (E3);
 * - the operator's allow pattern `HOOKRELAY_TEMPLATE_ENV` (comma-separated names with `*` globs,
 *   `*` for every other name) says which other names caller hooks may use. Default `none`:
 *   deny by default, an operator opts names in.
 */
import { TemplateEnvPatternError } from './errors.ts';
import {
  describeTemplateEnvProblem,
  ENV_VAR_NAME_TOO_LONG_MESSAGE,
  MAX_ENV_VAR_NAME_LENGTH,
  RESERVED_TEMPLATE_SUMMARY,
  TEMPLATE_ENV_VARIABLE,
} from './templateEnvProblem.ts';

// The wording of a bad HOOKRELAY_TEMPLATE_ENV and the names it quotes live in templateEnvProblem.ts (TemplateEnvPatternError, in errors.ts, words its message with them).
export {
  describeTemplateEnvProblem,
  ENV_VAR_NAME_TOO_LONG_MESSAGE,
  MAX_ENV_VAR_NAME_LENGTH,
  RESERVED_TEMPLATE_SUMMARY,
  TEMPLATE_ENV_VARIABLE,
  type TemplateEnvProblem,
} from './templateEnvProblem.ts';

/**
 * Exact names never templatable: connection strings, the Node runtime's own options and the proxy
 * variables (undici, curl and most HTTP clients read them; a proxy URL often carries credentials).
 * Lower-case proxy names are listed too, although a template name is upper-case only.
 */
export const RESERVED_TEMPLATE_VARIABLES: readonly string[] = [
  'DATABASE_URL',
  'REDIS_URL',
  'NODE_OPTIONS',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
];
/**
 * Families never templatable: `PG*` (node-postgres reads PGPASSWORD, PGHOST, ...), `POSTGRES_*`
 * (the official Postgres image and compose files: POSTGRES_PASSWORD), `REDIS*`, `QSTASH*` and
 * `UPSTASH_*` (the QStash and Upstash SDKs), `HOOKRELAY_*`, `OTEL_*` (the OpenTelemetry SDK:
 * exporter headers carry credentials), `OPENAI_*` (the OpenAI SDKs the integrations run in the
 * same process read OPENAI_API_KEY, OPENAI_BASE_URL), `AGENT_HOOK_WEBHOOK_*` (E1) and the cloud
 * credential families.
 */
export const RESERVED_TEMPLATE_PREFIXES: readonly string[] = [
  'PG',
  'POSTGRES_',
  'REDIS',
  'QSTASH',
  'UPSTASH_',
  'HOOKRELAY_',
  'OTEL_',
  'OPENAI_',
  'AGENT_HOOK_WEBHOOK_',
  'AWS_',
  'GOOGLE_',
  'AZURE_',
];
// RESERVED_TEMPLATE_SUMMARY (templateEnvProblem.ts) spells both lists for messages: keep it in step.
/** The environment hooks' own variables (E1): a source for those hooks alone. */
export const ENV_HOOK_VARIABLE_PREFIX = 'AGENT_HOOK_WEBHOOK_';

/** Deny by default: no template resolves until the operator lists names or a pattern (`*` for every unreserved name). */
export const DEFAULT_TEMPLATE_ENV = 'none';
const NO_TEMPLATES = 'none';
const PATTERN_ENTRY = /^[A-Z_*][A-Z0-9_*]*$/;
/** What a `*` may stand for: the characters of a variable name (the glob matches names only). */
const TEMPLATE_NAME = /^[A-Z_][A-Z0-9_]*$/;

export function isReservedTemplateVariable(name: string): boolean {
  return RESERVED_TEMPLATE_VARIABLES.includes(name) || RESERVED_TEMPLATE_PREFIXES.some((p) => name.startsWith(p));
}

/** The operator's allow pattern, parsed once (`parseTemplateEnvPattern`). */
export type TemplateEnvPattern = {
  /** The pattern as configured (for messages; it holds names, never values). */
  readonly source: string;
  readonly exact: ReadonlySet<string>;
  /** Each glob as its literal pieces between the `*`s (`APP_*_TOKEN` → `['APP_', '_TOKEN']`). */
  readonly globs: readonly (readonly string[])[];
};

/** The rule an entry of the pattern breaks, in words without the variable's name, or undefined. Used by the settings schema. */
export function templateEnvPatternProblem(raw: string): string | undefined {
  try {
    parseTemplateEnvPattern(raw);
    return undefined;
  } catch (error) {
    return error instanceof TemplateEnvPatternError && error.problem ? describeTemplateEnvProblem(error.problem) : 'is invalid';
  }
}

/**
 * Parses `HOOK_*,BILLING_TOKEN` style patterns. Unset or blank = the default (`none`); `none` = no
 * template may resolve. An entry that can only ever match reserved names is an error: it would
 * silently do nothing, and the operator most likely meant to expose a secret that stays closed.
 */
export function parseTemplateEnvPattern(raw: string | undefined): TemplateEnvPattern {
  const source = raw === undefined || raw.trim() === '' ? DEFAULT_TEMPLATE_ENV : raw.trim();
  if (source === NO_TEMPLATES) return { source, exact: new Set(), globs: [] };
  const entries = source
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) throw new TemplateEnvPatternError({ rule: 'no_entry' });
  const exact = new Set<string>();
  const globs: string[][] = [];
  for (const [index, entry] of entries.entries()) {
    const position = { entry: index + 1, entries: entries.length };
    if (entry.length > MAX_ENV_VAR_NAME_LENGTH) throw new TemplateEnvPatternError({ rule: 'too_long', ...position });
    if (!PATTERN_ENTRY.test(entry)) throw new TemplateEnvPatternError({ rule: 'not_a_name', ...position });
    const literalPrefix = entry.split('*')[0] ?? '';
    const onlyReserved = entry.includes('*') ? RESERVED_TEMPLATE_PREFIXES.some((p) => literalPrefix.startsWith(p)) : isReservedTemplateVariable(entry);
    if (onlyReserved) throw new TemplateEnvPatternError({ rule: 'only_reserved', ...position });
    if (entry.includes('*')) globs.push(entry.split('*'));
    else exact.add(entry);
  }
  return { source, exact, globs };
}

/**
 * W2: a `*` glob matched without backtracking. The first piece must open the name, the last
 * must close it, and each piece between is taken at its leftmost place after the previous one
 * (the leftmost place never loses a match: whatever fits after a later place fits after it too).
 * One pass over the name per piece, whatever the number of `*`s — a regex of `APP_*_*_*_TOKEN`
 * backtracked for seconds over a long run of `_`.
 */
function globMatches(pieces: readonly string[], name: string): boolean {
  const first = pieces[0] ?? '';
  const last = pieces[pieces.length - 1] ?? '';
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = name.indexOf(piece, at);
    if (found === -1 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

export function templateEnvAllows(pattern: TemplateEnvPattern, name: string): boolean {
  if (name.length > MAX_ENV_VAR_NAME_LENGTH || !TEMPLATE_NAME.test(name)) return false;
  return pattern.exact.has(name) || pattern.globs.some((g) => globMatches(g, name));
}

/** The default pattern (`none`), shared: what a caller that passes no pattern gets. */
export const DEFAULT_TEMPLATE_ENV_PATTERN: TemplateEnvPattern = parseTemplateEnvPattern(DEFAULT_TEMPLATE_ENV);

export type TemplateSourceOptions = {
  /** The operator's pattern; default `none` (no name). */
  pattern?: TemplateEnvPattern;
  /** An environment hook built from `AGENT_HOOK_WEBHOOK_*` (E3): may read those variables (other names follow the rules of any hook). */
  environmentHook?: boolean;
};

/** The static rule: reserved names are never a source, whatever the pattern (environment hooks may read theirs). */
export function reservedTemplateSourceProblem(name: string, environmentHook = false): string | undefined {
  // W2: a name past the cap is refused before anything looks at it, and never echoed.
  if (name.length > MAX_ENV_VAR_NAME_LENGTH) return `a template variable name ${ENV_VAR_NAME_TOO_LONG_MESSAGE}`;
  if (environmentHook && name.startsWith(ENV_HOOK_VARIABLE_PREFIX)) return undefined;
  if (isReservedTemplateVariable(name))
    return `${name} is one of hookrelay's own variables (reserved: ${RESERVED_TEMPLATE_SUMMARY}) and can never be a template source`;
  return undefined;
}

/**
 * Why `name` may not be a template source for this hook, or undefined: the static rule, then the
 * operator's pattern. The message names the variable only (a name from the hook config, never a value).
 */
export function templateSourceProblem(name: string, options: TemplateSourceOptions = {}): string | undefined {
  const environmentHook = options.environmentHook === true;
  const reserved = reservedTemplateSourceProblem(name, environmentHook);
  if (reserved !== undefined) return reserved;
  if (environmentHook && name.startsWith(ENV_HOOK_VARIABLE_PREFIX)) return undefined;
  if (!templateEnvAllows(options.pattern ?? DEFAULT_TEMPLATE_ENV_PATTERN, name)) return `${name} is not allowed by ${TEMPLATE_ENV_VARIABLE}`;
  return undefined;
}
