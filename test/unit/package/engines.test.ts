/**
 * UX-6: a fresh `npm install` on the declared Node prints no EBADENGINE line. `engines.node` is
 * what the package needs (every runtime dependency, transitive ones included, accepts its lowest
 * version); `devEngines.runtime` is what developing it needs: ai 7 and openai 7 (the only lines
 * the integrations' peer ranges allow) and every OpenTelemetry SDK that works with
 * @opentelemetry/api 1.10 declare Node >= 22, which is where 145 EBADENGINE lines came from on
 * Node 20 while the package declared only >= 20.19. Read from package-lock.json, as npm does.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
type LockEntry = { dev?: boolean; optional?: boolean; peer?: boolean; engines?: { node?: string } | string[] };
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devEngines?: { runtime?: { name: string; version: string } };
};
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v.split('.').map((p) => Number(p));
  return [a, b, c];
};
const cmp = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** One comparator of a node-semver range (`>=20.19.0`, `^20.12`, `~1.2`, `20`, `6.*`, `10.x`, `*`) against a full version. */
function comparatorHolds(comparator: string, version: Version): boolean {
  const m = /^(>=|<=|>|<|\^|~|=)?\s*v?([\dx*]+(?:\.[\dx*]+){0,2})$/.exec(comparator);
  if (!m) throw new Error(`unhandled engines comparator ${JSON.stringify(comparator)}`);
  const op = m[1] ?? '';
  const parts = (m[2] as string).split('.').filter((p) => p !== 'x' && p !== '*');
  const base = parse(parts.join('.') || '0');
  if (op === '>=') return cmp(version, base) >= 0;
  if (op === '>') return cmp(version, base) > 0;
  if (op === '<=') return cmp(version, base) <= 0;
  if (op === '<') return cmp(version, base) < 0;
  if (parts.length === 0) return true; // `*`
  let upper: Version;
  if (op === '^') upper = base[0] > 0 || parts.length === 1 ? [base[0] + 1, 0, 0] : [0, base[1] + 1, 0];
  else if (op === '~') upper = parts.length === 1 ? [base[0] + 1, 0, 0] : [base[0], base[1] + 1, 0];
  else if (parts.length === 3)
    return cmp(version, base) === 0; // an exact version
  else upper = parts.length === 1 ? [base[0] + 1, 0, 0] : [base[0], base[1] + 1, 0]; // `20`, `6.*`, `10.x`
  return cmp(version, base) >= 0 && cmp(version, upper) < 0;
}

function satisfies(range: string, version: string): boolean {
  const v = parse(version);
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, '$1')
      .split(/\s+/)
      .filter(Boolean)
      .every((c) => comparatorHolds(c, v)),
  );
}

/** The lowest version a `>=X.Y.Z` declaration admits. */
function lowest(range: string): string {
  const m = /^>=\s*(\d+\.\d+\.\d+)$/.exec(range.trim());
  if (!m) throw new Error(`declare the lowest Node as >=X.Y.Z (got ${JSON.stringify(range)})`);
  return m[1] as string;
}

function refusing(version: string, which: (entry: LockEntry) => boolean): string[] {
  return Object.entries(lock.packages)
    .filter(([name, entry]) => name !== '' && which(entry))
    .filter(([, entry]) => {
      const node = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return node !== undefined && !satisfies(node, version);
    })
    .map(([name, entry]) => `${name.replace(/^.*node_modules\//, '')} (node ${(entry.engines as { node: string }).node})`);
}

describe('UX-6 engines: no EBADENGINE on a fresh install with the declared Node', () => {
  it('UX-6 the range reader agrees with npm on the forms the lockfile uses', () => {
    expect(satisfies('^20.19.0 || >=22.12.0', '20.19.0')).toBe(true);
    expect(satisfies('^20.19.0 || >=22.12.0', '21.0.0')).toBe(false);
    expect(satisfies('>= 20', '20.19.0')).toBe(true);
    expect(satisfies('>=22', '20.19.0')).toBe(false);
    expect(satisfies('6.* || 8.* || >= 10.*', '20.19.0')).toBe(true);
    expect(satisfies('^20.12||^22||>=24', '23.1.0')).toBe(false);
    expect(satisfies('>=9.3.0 || >=8.10.0 <9.0.0', '8.11.0')).toBe(true);
    expect(satisfies('20 || >=22', '21.5.0')).toBe(false);
  });

  it('UX-6 every runtime dependency (transitive too) accepts the lowest Node of engines.node', () => {
    expect(refusing(lowest(pkg.engines.node), (e) => e.dev !== true)).toEqual([]);
  });

  it('UX-6 every package of the dev install accepts the lowest Node of devEngines.runtime, and that is Node', () => {
    expect(pkg.devEngines?.runtime?.name).toBe('node');
    const devLowest = lowest(pkg.devEngines?.runtime?.version ?? '');
    expect(refusing(devLowest, () => true)).toEqual([]);
    // Honest: the dev floor is higher than the package's only because dev packages need it.
    expect(refusing(lowest(pkg.engines.node), () => true).length).toBeGreaterThan(0);
  });
});
