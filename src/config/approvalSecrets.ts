/**
 * HOOKRELAY_APPROVAL_SECRETS (A3): space-separated secrets that sign answer tokens (the first
 * signs, any verifies: rotation). Parsed once here for the settings and the token code.
 */

/** A secret shorter than this is refused (it would be guessable). */
const MIN_APPROVAL_SECRET_LENGTH = 32;

/** Why the value cannot be used (naming the entry, never echoing it), or undefined. */
export function approvalSecretsProblem(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const secrets = parseApprovalSecrets(value);
  const short = secrets.findIndex((s) => s.length < MIN_APPROVAL_SECRET_LENGTH);
  return short === -1 ? undefined : `secret ${short + 1} is shorter than ${MIN_APPROVAL_SECRET_LENGTH} characters (e.g. openssl rand -hex 32)`;
}

export function parseApprovalSecrets(value: string | undefined): string[] {
  return value === undefined || value.trim() === '' ? [] : value.trim().split(/\s+/);
}
