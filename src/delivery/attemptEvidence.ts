/**
 * Q8: what an attempt keeps as evidence of why a receiver answered as it did — the request
 * headers as configured (a `${VAR}` template shown as the template, never its value; the
 * signature elided) and the response excerpt with every resolved template value taken out (a
 * receiver that echoes its request must not put a secret into the ledger). Pure functions.
 */
import { TEMPLATE_PATTERN } from '../contract/webhook.ts';
import { userAgent } from './userAgent.ts';

const SIGNATURE_HEADER = 'webhook-signature';
const ELIDED = '(elided)';
const REDACTED = '[redacted]';
/** A cut excerpt ending with this many characters of a secret's start has them cut too. */
const MIN_TAIL_CHARS = 3;

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
 * `text` with each secret replaced by `[redacted]`, as it is and in the encodings a receiver
 * may echo it in (JSON-escaped, URL-encoded, base64); a cut excerpt that ends inside one loses
 * that tail too.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  if (secrets.length === 0) return text;
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s.length === 0) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
    forms.add(encodeURIComponent(s));
    forms.add(Buffer.from(s, 'utf8').toString('base64'));
    forms.add(Buffer.from(s, 'utf8').toString('base64url'));
  }
  // Longest first: a secret containing another is taken out whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  let out = text;
  for (const form of ordered) out = out.split(form).join(REDACTED);
  for (const form of ordered) {
    for (let k = Math.min(form.length - 1, out.length); k >= MIN_TAIL_CHARS; k--) {
      if (out.endsWith(form.slice(0, k))) {
        out = `${out.slice(0, out.length - k)}${REDACTED}`;
        break;
      }
    }
  }
  return out;
}
