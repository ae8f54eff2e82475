/**
 * Q6: the one parser of HOOKRELAY_SIGNING_SECRETS, used by the settings schema (worker, CLI) and
 * at send time (dispatcher, remote interceptors). Standard Webhooks secrets: `whsec_` + base64
 * of 24–64 random bytes, space-separated for rotation. Messages name the entry, never a secret.
 */
const SIGNING_SECRETS_ENV = 'HOOKRELAY_SIGNING_SECRETS';
const SIGNING_SECRET_PREFIX = 'whsec_';
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type SigningSecret = { secret: string; key: Buffer };

/**
 * The rule the first bad entry breaks (`entry #2 must start with whsec_`), without the variable's
 * name: each edge words its own message around it. Undefined when every entry is a valid secret.
 */
export function signingSecretsProblem(value: string | undefined): string | undefined {
  const entries = splitSecrets(value);
  for (let i = 0; i < entries.length; i++) {
    const problem = entryProblem(entries[i]!, i);
    if (problem) return problem;
  }
  return undefined;
}

/** Split and decode; `onProblem` builds the error thrown for the first bad entry. */
export function decodeSigningSecrets(value: string | undefined, onProblem: (message: string) => Error): SigningSecret[] {
  return splitSecrets(value).map((secret, index) => {
    const problem = entryProblem(secret, index);
    if (problem) throw onProblem(`${SIGNING_SECRETS_ENV} ${problem}`);
    return { secret, key: Buffer.from(secret.slice(SIGNING_SECRET_PREFIX.length), 'base64') };
  });
}

function splitSecrets(value: string | undefined): string[] {
  return (value ?? '').split(/\s+/).filter((s) => s !== '');
}

/** Q6: the expected form, said with every problem (the bare rule left operators guessing). */
const EXPECTED_FORM = `expected ${SIGNING_SECRET_PREFIX}<base64 of ${MIN_SECRET_BYTES}-${MAX_SECRET_BYTES} random bytes>, space-separated for rotation, e.g. "${SIGNING_SECRET_PREFIX}$(openssl rand -base64 32)"`;

function entryProblem(secret: string, index: number): string | undefined {
  const where = `entry #${index + 1}`;
  if (!secret.startsWith(SIGNING_SECRET_PREFIX)) return `${where} must start with ${SIGNING_SECRET_PREFIX} (${EXPECTED_FORM})`;
  const encoded = secret.slice(SIGNING_SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) return `${where} is not a ${SIGNING_SECRET_PREFIX}<base64> secret (${EXPECTED_FORM})`;
  const bytes = Buffer.from(encoded, 'base64').length;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) return `${where} must decode to ${MIN_SECRET_BYTES}–${MAX_SECRET_BYTES} bytes (${EXPECTED_FORM})`;
  return undefined;
}
