/**
 * W2: what is wrong with a HOOKRELAY_TEMPLATE_ENV value, in words, and the names and bounds those
 * words quote. Apart from templateSources.ts (which re-exports all of it) so that
 * TemplateEnvPatternError (errors.ts) can word its message without importing the parser back.
 */

/** The reserved names as an operator reads them (messages and docs). */
export const RESERVED_TEMPLATE_SUMMARY =
  'DATABASE_URL, NODE_OPTIONS, HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY, PG*, POSTGRES_*, REDIS*, QSTASH*, UPSTASH_*, HOOKRELAY_*, OTEL_*, OPENAI_*, AGENT_HOOK_WEBHOOK_*, AWS_*, GOOGLE_*, AZURE_*';
/**
 * W2: the longest variable name accepted anywhere (allowedEnvVars entries, `${NAME}`
 * templates, each HOOKRELAY_TEMPLATE_ENV entry): real names are far shorter, and a bound keeps
 * every check on a name, and every message naming it, small.
 */
export const MAX_ENV_VAR_NAME_LENGTH = 128;
export const ENV_VAR_NAME_TOO_LONG_MESSAGE = `must be at most ${MAX_ENV_VAR_NAME_LENGTH} characters (a variable name)`;

export const TEMPLATE_ENV_VARIABLE = 'HOOKRELAY_TEMPLATE_ENV';

/** What is wrong with a HOOKRELAY_TEMPLATE_ENV value: the rule broken and, per entry, its position (never its text). */
export type TemplateEnvProblem = { rule: 'no_entry' } | { rule: 'not_a_name' | 'only_reserved' | 'too_long'; entry: number; entries: number };

/** The rule in words, without the variable's name (each edge puts it where it belongs). */
export function describeTemplateEnvProblem(problem: TemplateEnvProblem): string {
  if (problem.rule === 'no_entry') return "no entry; give names such as HOOK_*,BILLING_TOKEN, '*' or 'none'";
  const which = `entry ${problem.entry} of ${problem.entries}`;
  if (problem.rule === 'too_long') return `${which} ${ENV_VAR_NAME_TOO_LONG_MESSAGE}`;
  return problem.rule === 'not_a_name'
    ? `${which} must be an upper-case variable name (A-Z, 0-9, _) with optional * globs, or the whole value '*' or 'none'`
    : `${which} names only reserved variables (${RESERVED_TEMPLATE_SUMMARY}), which are never template sources`;
}
