/**
 * DEP-4 (issue 50): the README is a map — at most 300 lines, no rule ids (they live in docs/ and
 * docs/rules.md), every link into the repository resolves (file and heading), and its TypeScript
 * examples compile against the package as an app imports it. The docs pages' own links resolve too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { idsIn, ROOT } from '../../../scripts/rules-index.ts';

const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** GitHub's heading anchor: lower case, punctuation dropped (`-` and `_` kept), spaces → `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) out.add(m[1]!); // explicit anchors
  return out;
}

/** Every relative markdown link of a page (images too), outside code blocks: [target, anchor]. */
function linksOf(file: string): { target: string; anchor: string | undefined }[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((href) => !/^[a-z]+:/i.test(href))
    .map((href) => {
      const [target, anchor] = href.split('#');
      return { target: target === '' ? file : path.resolve(path.dirname(file), target!), anchor };
    });
}

describe('DEP-4: the README is a map into docs/', () => {
  it('DEP-4: is at most 300 lines and cites no rule id outside the sentence that says where they live', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const prose = readme.replace(/^.*Rule ids such as.*$/m, '');
    expect(idsIn(prose)).toEqual([]);
  });

  it('DEP-4: its folder table names every folder of src/ and nothing else (the map matches the tree)', () => {
    const table = readme.slice(readme.indexOf('| folder | holds |'));
    const firstCells = table
      .slice(0, table.indexOf('\n\n'))
      .split('\n')
      .slice(2)
      .map((row) => row.split('|')[1] ?? '');
    const named = firstCells.flatMap((cell) => [...cell.matchAll(/`([a-z]+)\/`/g)].map((m) => m[1]!)).sort();
    const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    expect(named).toEqual(folders);
  });

  it('DEP-4: has the two commands, the architecture picture and one example per entry (server app, worker, CLI, integration)', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test ');
    expect(readme).toContain('server app ──► contract (zod)');
    for (const heading of ['## A server app', '## A worker', '## The CLI', '## An integration']) expect(readme).toContain(heading);
    expect(readme).toMatch(/node bin\/hookrelay\.mjs/);
  });

  it('DEP-4: every relative link of the README and of the docs pages resolves to a file, and every #anchor to a heading', () => {
    const pages = [
      path.join(ROOT, 'README.md'),
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => path.join(ROOT, 'docs', f)),
    ];
    let checked = 0;
    for (const page of pages) {
      for (const { target, anchor } of linksOf(page)) {
        const where = `${path.relative(ROOT, page)} → ${path.relative(ROOT, target)}${anchor ? `#${anchor}` : ''}`;
        expect(existsSync(target), where).toBe(true);
        if (anchor !== undefined && target.endsWith('.md')) expect([...anchorsOf(target)], where).toContain(anchor);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('DEP-4: the README\u2019s TypeScript examples compile against the package, as an app imports it', () => {
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    // Inside the repository, so `hookrelay` resolves to the package itself (its `exports`, dist/ types).
    const dir = mkdtempSync(path.join(ROOT, '.readme-check-'));
    try {
      const files = blocks.map((code, i) => {
        const file = path.join(dir, `block-${i}.ts`);
        writeFileSync(file, `${code}\nexport {};\n`);
        return path.basename(file);
      });
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { noEmit: true, paths: {} }, include: files, files: [] }),
      );
      const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
      try {
        execFileSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
      } catch (err) {
        const out = err as { stdout?: string; stderr?: string };
        throw new Error(`README examples do not compile:\n${out.stdout ?? ''}${out.stderr ?? ''}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
