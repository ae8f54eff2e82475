/**
 * DEP-4 (issue 50): the CLI's read commands load only what they use — timed in the bench
 * (`BENCH_ONLY=cli`), proved here by what the bin resolves. A resolution hook records every
 * module the process resolves: `--version` loads no module of dist/; `deliveries list` loads
 * neither BullMQ nor ioredis; `stats` and `endpoints list` read Redis through ioredis, not BullMQ;
 * read commands run the one-bundle build (dist/cli-bundle/), not the ~290 compiled modules.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { TEST_REDIS_URL } from '../support/redisKeys.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hookrelay.mjs');

let scratch: string;
let store: TestStore;

beforeAll(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-cli-load-'));
  // Every resolved URL, one a line, into $TRACE_OUT (module.register: the hooks run off-thread).
  writeFileSync(
    path.join(scratch, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(spec, ctx, next) { const r = await next(spec, ctx); appendFileSync(process.env.TRACE_OUT, r.url + '\\n'); return r; }`,
  );
  writeFileSync(
    path.join(scratch, 'trace.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(scratch, 'hooks.mjs')).href)});\n`,
  );
  store = await createTestStore('dep4');
}, 60_000);

afterAll(async () => {
  await store?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The modules `hookrelay <args>` resolved, as URLs. */
async function resolvedBy(args: string[]): Promise<{ urls: string[]; stdout: string }> {
  const out = path.join(scratch, `trace-${args.join('-').replace(/\W+/g, '_')}.txt`);
  writeFileSync(out, '');
  const { stdout } = await run(process.execPath, ['--import', path.join(scratch, 'trace.mjs'), BIN, ...args], {
    cwd: scratch,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: scratch,
      TRACE_OUT: out,
      DATABASE_URL: store.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: `dep4-${path.basename(scratch)}`,
    },
    timeout: 30_000,
  });
  return { urls: readFileSync(out, 'utf8').split('\n').filter(Boolean), stdout };
}
const loads = (urls: string[], pkg: string) => urls.some((u) => u.includes(`/node_modules/${pkg}/`));

describe('DEP-4: read commands load only what they use', () => {
  it('DEP-4: `--version` prints the version without loading any module of dist/', async () => {
    const { urls, stdout } = await resolvedBy(['--version']);
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(stdout.trim()).toBe(version);
    expect(urls.filter((u) => u.includes('/dist/'))).toEqual([]);
  });

  it('DEP-4: `deliveries list` loads neither BullMQ nor ioredis', async () => {
    const { urls, stdout } = await resolvedBy(['deliveries', 'list']);
    expect(stdout).toMatch(/no deliveries match/);
    // The trace sees the bundle's chunks (scripts/bundle-cli.mjs): drizzle-orm is inside them, not loaded file by file.
    expect(urls.some((u) => u.includes('/dist/cli-bundle/'))).toBe(true);
    expect(urls.some((u) => u.includes('/dist/entry/'))).toBe(false);
    expect(loads(urls, 'drizzle-orm')).toBe(false);
    expect(loads(urls, 'bullmq')).toBe(false);
    expect(loads(urls, 'ioredis')).toBe(false);
  });

  it('DEP-4: `stats` and `endpoints list` read Redis through ioredis and never load BullMQ', async () => {
    for (const args of [['stats'], ['endpoints', 'list']]) {
      const { urls } = await resolvedBy(args);
      expect(loads(urls, 'ioredis'), args.join(' ')).toBe(true);
      expect(loads(urls, 'bullmq'), args.join(' ')).toBe(false);
    }
  });
});
