/**
 * W2 / W1b: resolve `${NAME}` header templates at send time, only from the hook's
 * allowedEnvVars and only from the given environment. Errors name the header and the variable,
 * never a value.
 */
import { hasUnsafeHeaderValue, isForbiddenHeaderName, TEMPLATE_PATTERN } from '../contract/webhook.ts';
import { DeliveryConfigError } from './errors.ts';

/** RFC 9110 token characters for a header field name. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TEMPLATE_START = '${';
export const CONTENT_TYPE = 'content-type';
export const JSON_CONTENT_TYPE = 'application/json';

export function resolveHeaderTemplates(
  headers: Record<string, string> | undefined,
  allowedEnvVars: string[] | undefined,
  env: Record<string, string | undefined>,
): Record<string, string> {
  const allowed = new Set(allowedEnvVars ?? []);
  const resolved: Record<string, string> = {};
  for (const [rawName, template] of Object.entries(headers ?? {})) {
    const name = rawName.toLowerCase();
    const label = `header ${JSON.stringify(name)}`;
    if (!HEADER_NAME.test(rawName)) throw new DeliveryConfigError(`${label} is not a valid header name`);
    if (isForbiddenHeaderName(name)) throw new DeliveryConfigError(`${label} is a forbidden header name`);
    if (Object.hasOwn(resolved, name)) throw new DeliveryConfigError(`${label} is given more than once (header names are case-insensitive)`);
    if (typeof template !== 'string') throw new DeliveryConfigError(`${label} must be a string`);
    const value = template.replace(TEMPLATE_PATTERN, (_match, variable: string) => {
      const named = JSON.stringify(variable);
      if (!allowed.has(variable)) throw new DeliveryConfigError(`${label}: template variable ${named} is not listed in allowedEnvVars`);
      const found = Object.hasOwn(env, variable) ? env[variable] : undefined;
      if (found === undefined || found === '') throw new DeliveryConfigError(`${label}: environment variable ${named} is unset or empty`);
      return found;
    });
    if (hasUnsafeHeaderValue(value)) throw new DeliveryConfigError(`${label}: value contains CR, LF or NUL after template expansion`);
    if (value.includes(TEMPLATE_START)) throw new DeliveryConfigError(`${label}: value still contains "\${" after template expansion`);
    resolved[name] = value;
  }
  delete resolved[CONTENT_TYPE];
  resolved[CONTENT_TYPE] = JSON_CONTENT_TYPE;
  return resolved;
}
