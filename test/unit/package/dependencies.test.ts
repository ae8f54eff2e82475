/**
 * Issue 50: hookrelay runs on the current majors. DEP-1: BullMQ 6 and ioredis 6 are what npm
 * installed (asked of `npm ls`, the lock and the installed package itself: no 5.x copy left
 * anywhere in the tree). DEP-2: the MCP SDK peer ranges accept 1.x (`@modelcontextprotocol/sdk`)
 * and 2.x (`@modelcontextprotocol/client`) side by side, both optional, and the versions the
 * repository develops against fall inside them.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
type Manifest = {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
const installed = (name: string) => (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
const major = (version: string) => Number(version.split('.')[0]);

type LsNode = { version?: string; dependencies?: Record<string, LsNode> };
/** Every version of `name` npm reports anywhere in the installed tree. */
function versionsInTree(node: LsNode, name: string, found: string[] = []): string[] {
  for (const [dep, child] of Object.entries(node.dependencies ?? {})) {
    if (dep === name && child.version) found.push(child.version);
    versionsInTree(child, name, found);
  }
  return found;
}

/** `>=A <B` with whole versions: the shape of the MCP peer ranges. */
function inRange(range: string, version: string): boolean {
  const cmp = (a: string, b: string) => {
    const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
    for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
    return 0;
  };
  return range.split(/\s+/).every((c) => {
    const m = /^(>=|<)(\d+(?:\.\d+){0,2})$/.exec(c);
    if (!m) throw new Error(`unhandled comparator ${c} in ${range}`);
    return m[1] === '>=' ? cmp(version, m[2] as string) >= 0 : cmp(version, m[2] as string) < 0;
  });
}

describe('DEP-1: BullMQ 6 and ioredis 6', () => {
  it('DEP-1: `npm ls bullmq ioredis` reports 6.x and nothing else, everywhere in the tree', () => {
    const out = execFileSync('npm', ['ls', 'bullmq', 'ioredis', '--all', '--json'], { cwd: ROOT, encoding: 'utf8' });
    const tree = JSON.parse(out) as LsNode;
    for (const name of ['bullmq', 'ioredis']) {
      const versions = versionsInTree(tree, name);
      expect(versions.length, name).toBeGreaterThan(0);
      expect(
        versions.filter((v) => major(v) !== 6),
        name,
      ).toEqual([]);
    }
  });

  it('DEP-1: package.json asks for ^6, the lock pins 6.x, and the installed packages are 6.x', () => {
    for (const name of ['bullmq', 'ioredis']) {
      expect(pkg.dependencies[name], name).toMatch(/^\^6\./);
      const locked = Object.entries(lock.packages).filter(([p]) => p === `node_modules/${name}` || p.endsWith(`/node_modules/${name}`));
      expect(locked.length, name).toBeGreaterThan(0);
      for (const [p, entry] of locked) expect(major(entry.version ?? '0'), p).toBe(6);
      expect(major(installed(name)), name).toBe(6);
    }
  });
});

describe('DEP-2: MCP SDK 2 as a peer beside 1.x', () => {
  it('DEP-2: the 1.x SDK and the 2.x client are optional peers whose ranges take their own major and not the other', () => {
    const v1 = pkg.peerDependencies['@modelcontextprotocol/sdk'] as string;
    const v2 = pkg.peerDependencies['@modelcontextprotocol/client'] as string;
    expect(inRange(v1, '1.20.0')).toBe(true);
    expect(inRange(v1, '1.99.0')).toBe(true);
    expect(inRange(v1, '2.0.0')).toBe(false);
    expect(inRange(v2, '2.0.0')).toBe(true);
    expect(inRange(v2, '2.4.0')).toBe(true);
    expect(inRange(v2, '3.0.0')).toBe(false);
    for (const name of ['@modelcontextprotocol/sdk', '@modelcontextprotocol/client']) expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
  });

  it('DEP-2: the versions installed for development fall inside the peer ranges (both majors at once)', () => {
    expect(inRange(pkg.peerDependencies['@modelcontextprotocol/sdk'] as string, installed('@modelcontextprotocol/sdk'))).toBe(true);
    expect(inRange(pkg.peerDependencies['@modelcontextprotocol/client'] as string, installed('@modelcontextprotocol/client'))).toBe(true);
    expect(major(installed('@modelcontextprotocol/sdk'))).toBe(1);
    expect(major(installed('@modelcontextprotocol/client'))).toBe(2);
  });
});
