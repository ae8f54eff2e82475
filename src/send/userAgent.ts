import { readFileSync } from 'node:fs';

let cached: string | undefined;

/**
 * The `user-agent` every hookrelay request carries: `hookrelay/<version>`, the version read from
 * the package's own package.json on first use (never at import: the library entry has no side
 * effects). The path is relative to this module, so it resolves the same from `src/send/`
 * (tsx, tests) and from `dist/send/` in the installed tarball (package.json ships with it).
 * An unreadable or versionless package.json gives plain `hookrelay` rather than a wrong version.
 */
export function userAgent(): string {
  if (cached !== undefined) return cached;
  let version: unknown;
  try {
    version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version;
  } catch {
    version = undefined;
  }
  cached = typeof version === 'string' && /^[0-9A-Za-z.+-]{1,64}$/.test(version) ? `hookrelay/${version}` : 'hookrelay';
  return cached;
}
