/**
 * The integration entries are light: importing `hookrelay/ai-sdk` loads neither BullMQ, ioredis,
 * pg nor the OpenAI Agents SDK, and `hookrelay/openai-agents` neither those nor the AI SDK. A
 * resolution hook in a child process records every package a specifier resolves into.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const HEAVY = ['bullmq', 'ioredis', 'pg', 'drizzle-orm', '@electric-sql/pglite', '@upstash/qstash'];

async function packagesLoadedBy(entry: string): Promise<Set<string>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-light-'));
  writeFileSync(
    path.join(dir, 'record-hook.mjs'),
    `export async function resolve(specifier, context, next) {
       const r = await next(specifier, context);
       const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
       if (m) process.stderr.write('PKG ' + m[1] + '\\n');
       return r;
     }`,
  );
  writeFileSync(
    path.join(dir, 'register.mjs'),
    `import { register } from 'node:module'; register(${JSON.stringify(path.join(dir, 'record-hook.mjs'))}, import.meta.url);\n`,
  );
  const { stderr, stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      path.join(dir, 'register.mjs'),
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(path.join(ROOT, entry))}); console.log('ok')`,
    ],
    { cwd: ROOT, timeout: 60_000 },
  );
  expect(stdout.trim()).toBe('ok');
  return new Set(
    stderr
      .split('\n')
      .filter((l) => l.startsWith('PKG '))
      .map((l) => l.slice(4)),
  );
}

describe('AI-SDK / Agents-SDK entries are light', () => {
  it('AI-SDK import src/entry/aiSdk.ts loads ai but no BullMQ, ioredis, pg or @openai/agents', async () => {
    const loaded = await packagesLoadedBy('src/entry/aiSdk.ts');
    expect(loaded.has('ai')).toBe(true); // the hook sees packages when they load
    expect([...loaded].filter((p) => HEAVY.includes(p) || p.startsWith('@openai/'))).toEqual([]);
  }, 60_000);

  it('Agents-SDK import src/entry/openaiAgents.ts loads no BullMQ, ioredis, pg or ai', async () => {
    const loaded = await packagesLoadedBy('src/entry/openaiAgents.ts');
    expect([...loaded].filter((p) => HEAVY.includes(p) || p === 'ai' || p.startsWith('@ai-sdk/'))).toEqual([]);
  }, 60_000);
});
