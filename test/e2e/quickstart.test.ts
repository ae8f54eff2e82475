import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('quickstart: npm start', () => {
  it('starts on the embedded store, logs "ready", and exits 0 on SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-qs-'));
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 45_000;
      while (!/"msg":"ready"/.test(output) && Date.now() < deadline && child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(output).toMatch(/"msg":"ready"/);
      expect(output).toMatch(/postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres/);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
