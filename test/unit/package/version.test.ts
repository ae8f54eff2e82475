/**
 * One version everywhere: package.json, package-lock.json's own entries, the user agent, the
 * CLI's `--version` source and every place the docs name hookrelay's version agree with the
 * release the changelog is written for (its first `### x.y.z` heading).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { userAgent } from '../../../src/send/userAgent.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string };
const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
const changelogVersion = /^### (\d+\.\d+\.\d+)/m.exec(read('CHANGELOG.md'))?.[1];

describe('LH-Q3: one version everywhere', () => {
  it('LH-Q3: package.json and package-lock.json say the version the changelog is written for (0.3.0)', () => {
    expect(changelogVersion).toBe('0.3.0');
    expect(pkg.version).toBe(changelogVersion);
    expect(lock.version).toBe(pkg.version);
    expect(lock.packages['']?.version).toBe(pkg.version);
  });

  it('LH-Q3: the user agent carries it', () => {
    expect(userAgent()).toBe(`hookrelay/${pkg.version}`);
  });

  it('LH-Q3: every hookrelay version the docs name is that version (changelog history and "before x" notes aside)', () => {
    const files = [
      'README.md',
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const wrong: string[] = [];
    for (const file of files) {
      const text = read(file);
      // The changelog tells history ("was hookrelay/0.1"): only what comes before it is checked in README.
      const body = file === 'README.md' ? text.slice(0, text.indexOf('## Changelog') >= 0 ? text.indexOf('## Changelog') : undefined) : text;
      for (const m of body.matchAll(/hookrelay\/(\d+(?:\.\d+)*)|package version \(`(\d+(?:\.\d+)*)`\)/g)) {
        const named = m[1] ?? m[2];
        if (named !== pkg.version) wrong.push(`${file}: ${m[0]}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
