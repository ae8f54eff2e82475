/**
 * Q8: what an attempt keeps as evidence of why a receiver answered as it did — the request
 * headers as configured (a `${VAR}` template shown as the template, never its value; the
 * signature elided) and which values to take out of the response excerpt (secretRedaction.ts: a
 * receiver that echoes its request must not put a secret into the ledger). Pure functions.
 */
import { TEMPLATE_PATTERN } from '../contract/webhook.ts';
import { userAgent } from './userAgent.ts';

const SIGNATURE_HEADER = 'webhook-signature';
const ELIDED = '(elided)';

/** The headers an attempt sent, as the ledger may keep them: templates as templates, the signature elided. */
export function sentHeadersAsConfigured(configured: Record<string, string> | undefined, sent: Record<string, string>): Record<string, string> {
  const templates = new Map<string, string>();
  for (const [name, value] of Object.entries(configured ?? {})) if (value.includes('${')) templates.set(name.toLowerCase(), value);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(sent)) {
    const lower = name.toLowerCase();
    out[lower] = lower === SIGNATURE_HEADER ? ELIDED : (templates.get(lower) ?? value);
  }
  // The transport adds its own (fetchTransport.ts).
  out['user-agent'] = userAgent();
  return out;
}

/** Every value a header template resolved to, and each variable's value in it. */
export function resolvedTemplateValues(
  configured: Record<string, string> | undefined,
  sent: Record<string, string>,
  env: Record<string, string | undefined>,
): string[] {
  const values = new Set<string>();
  for (const [name, template] of Object.entries(configured ?? {})) {
    if (!template.includes('${')) continue;
    const resolved = sent[name.toLowerCase()];
    if (resolved) values.add(resolved);
    for (const match of template.matchAll(TEMPLATE_PATTERN)) {
      const found = match[1] !== undefined && Object.hasOwn(env, match[1]) ? env[match[1]] : undefined;
      if (found) values.add(found);
    }
  }
  return [...values];
}

/**
 * The values a hook's header templates resolve to in `env` (whole values and each variable), for
 * redacting what came back from a request sent with them when the sent headers are not at hand
 * (a QStash callback reports on a request QStash made).
 */
export function templateValuesOf(configured: Record<string, string> | undefined, env: Record<string, string | undefined>): string[] {
  const sent: Record<string, string> = {};
  for (const [name, template] of Object.entries(configured ?? {})) {
    if (!template.includes('${')) continue;
    sent[name.toLowerCase()] = template.replace(TEMPLATE_PATTERN, (_match, variable: string) => (Object.hasOwn(env, variable) ? (env[variable] ?? '') : ''));
  }
  return resolvedTemplateValues(configured, sent, env);
}
