/**
 * DEP-3 (issue 50): hookrelay builds at pack time (`prepack`), never at install time. `npx
 * hookrelay` inside a clone makes npm install the folder; with a `prepare` script that install
 * rebuilt dist/ under whatever ran from it (17.6 s, 849 MB measured). Here: a clone-like folder
 * (the tracked files, a built dist/, the repository's node_modules), a fresh npm cache so npx
 * installs the folder as a first call does, and dist/ must come out the same files (inodes and
 * modification times unchanged) with no install script run.
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const NPX_TIMEOUT_MS = 180_000;

let clone: string;
const manifest = () => JSON.parse(readFileSync(path.join(clone, 'package.json'), 'utf8')) as { version: string; scripts: Record<string, string> };

/** inode and mtime of every file under dist/ (and of the folder itself). */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (p: string) => {
    const s = statSync(p);
    out.set(path.relative(dir, p), `${s.ino}:${s.mtimeMs}`);
    if (s.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
  };
  visit(dir);
  return out;
}

beforeAll(() => {
  clone = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-clone-'));
  // The tracked files as they are in the working tree (what a clone has), then dist/ as the suite's globalSetup built it.
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of tracked) {
    const from = path.join(ROOT, file);
    if (!statSync(from, { throwIfNoEntry: false })?.isFile()) continue; // deleted in the working tree
    mkdirSync(path.dirname(path.join(clone, file)), { recursive: true });
    cpSync(from, path.join(clone, file));
  }
  cpSync(path.join(ROOT, 'dist'), path.join(clone, 'dist'), { recursive: true, preserveTimestamps: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'), 'dir');
});

afterAll(() => {
  if (clone) rmSync(clone, { recursive: true, force: true });
});

describe('DEP-3: no build at install time', () => {
  it('DEP-3: package.json builds in prepack and has no prepare/install/postinstall script', () => {
    const { scripts } = manifest();
    expect(scripts.prepack).toBe('npm run build');
    for (const hook of ['prepare', 'preinstall', 'install', 'postinstall']) expect(scripts[hook], hook).toBeUndefined();
  });

  it(
    'DEP-3: `npx hookrelay --version` in a fresh clone prints the version and leaves dist/ untouched (same inodes and mtimes)',
    async () => {
      const before = snapshot(path.join(clone, 'dist'));
      const cache = path.join(clone, '.npm-cache'); // a first call: npx installs the folder anew
      const { stdout, stderr } = await run('npx', ['--yes', 'hookrelay', '--version'], {
        cwd: clone,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), npm_config_cache: cache, npm_config_update_notifier: 'false' },
        timeout: NPX_TIMEOUT_MS,
      });
      expect(stdout.trim()).toBe(manifest().version);
      expect(stderr).not.toMatch(/npm run build|prepare|tsc/);
      expect(snapshot(path.join(clone, 'dist'))).toEqual(before);
    },
    NPX_TIMEOUT_MS,
  );
});
