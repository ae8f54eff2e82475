/**
 * W2 / W1b: resolve `${NAME}` header templates at send time — the one place every outgoing
 * request (notification, decision, remote interceptor; local mode and the worker) gets its
 * headers. A template resolves only from the hook's allowedEnvVars, never from one of hookrelay's
 * own variables (environment hooks alone may read `AGENT_HOOK_WEBHOOK_*`), only when the
 * operator's HOOKRELAY_TEMPLATE_ENV allows it, and only from the given environment. Errors name
 * the header and the variable, never a value and never the text of a malformed template.
 */
import {
  ENV_VAR_NAME,
  hasMalformedTemplate,
  hasUnsafeHeaderValue,
  headerNameProblem,
  MALFORMED_TEMPLATE_MESSAGE,
  TEMPLATE_PATTERN,
  UNSAFE_HEADER_VALUE_MESSAGE,
} from '../contract/webhook.ts';
import { templateSourceProblem, type TemplateEnvPattern } from '../contract/templateSources.ts';
import { DeliveryConfigError } from '../contract/errors.ts';

const TEMPLATE_START = '${';
const CONTENT_TYPE = 'content-type';
const JSON_CONTENT_TYPE = 'application/json';
/** hookrelay always sends its own user agent (the transport sets it); a caller's value is dropped. */
const USER_AGENT_HEADER = 'user-agent';

export type ResolveHeaderOptions = {
  /** The operator's HOOKRELAY_TEMPLATE_ENV, parsed; default `none` (no template resolves). */
  templateEnv?: TemplateEnvPattern;
  /** An environment hook built by hookrelay from `AGENT_HOOK_WEBHOOK_*` (E3): may read those variables. */
  environmentHook?: boolean;
};

export function resolveHeaderTemplates(
  headers: Record<string, string> | undefined,
  allowedEnvVars: string[] | undefined,
  env: Record<string, string | undefined>,
  options: ResolveHeaderOptions = {},
): Record<string, string> {
  // The common case, no headers of the hook's own: no validation state to build.
  if (headers === undefined || Object.keys(headers).length === 0) return { [CONTENT_TYPE]: JSON_CONTENT_TYPE };
  const allowed = new Set(allowedEnvVars ?? []);
  const sourceOptions = { ...(options.templateEnv ? { pattern: options.templateEnv } : {}), environmentHook: options.environmentHook === true };
  const resolved: Record<string, string> = {};
  // Validated like any header, then dropped: hookrelay sends its own (never `delete`, which
  // turns the object into a slow dictionary for every later use of it).
  const dropped = new Set<string>();
  for (const [rawName, template] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    const label = `header ${JSON.stringify(name)}`;
    const nameProblem = headerNameProblem(rawName);
    if (nameProblem) throw new DeliveryConfigError(`${label} ${nameProblem}`);
    if (Object.hasOwn(resolved, name) || dropped.has(name))
      throw new DeliveryConfigError(`${label} is given more than once (header names are case-insensitive)`);
    if (typeof template !== 'string') throw new DeliveryConfigError(`${label} must be a string`);
    // Job data from an older producer may carry `${DATABASE_URL` (unterminated): refused before anything resolves.
    if (hasMalformedTemplate(template)) throw new DeliveryConfigError(`${label}: ${MALFORMED_TEMPLATE_MESSAGE}`);
    const value = template.replace(TEMPLATE_PATTERN, (_match, variable: string) => {
      // The text of a malformed template may be a pasted secret: never echoed.
      if (!ENV_VAR_NAME.test(variable)) throw new DeliveryConfigError(`${label}: contains a template that is not a variable name (^[A-Z_][A-Z0-9_]*$)`);
      const named = JSON.stringify(variable);
      const refused = templateSourceProblem(variable, sourceOptions);
      if (refused) throw new DeliveryConfigError(`${label}: template variable ${refused}`);
      if (!allowed.has(variable)) throw new DeliveryConfigError(`${label}: template variable ${named} is not listed in allowedEnvVars`);
      const found = Object.hasOwn(env, variable) ? env[variable] : undefined;
      if (found === undefined || found === '') throw new DeliveryConfigError(`${label}: environment variable ${named} is unset or empty`);
      return found;
    });
    if (hasUnsafeHeaderValue(value)) throw new DeliveryConfigError(`${label}: ${UNSAFE_HEADER_VALUE_MESSAGE} after template expansion`);
    if (value.includes(TEMPLATE_START)) throw new DeliveryConfigError(`${label}: value still contains "\${" after template expansion`);
    if (name === USER_AGENT_HEADER || name === CONTENT_TYPE) dropped.add(name);
    else resolved[name] = value;
  }
  resolved[CONTENT_TYPE] = JSON_CONTENT_TYPE;
  return resolved;
}
