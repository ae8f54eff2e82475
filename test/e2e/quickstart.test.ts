import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHookrelay } from '../support/hookrelayProcess.ts';

describe('quickstart: npm start', () => {
  it('starts on the embedded store, logs "ready", and exits 0 on SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-qs-'));
    const proc = startHookrelay([], { DATABASE_URL: '', HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_HTTP_PORT: '0', LOG_LEVEL: 'info' }, { npm: true });
    try {
      expect(await proc.waitForOutput(/"msg":"ready"/)).toBe(true);
      // W7: the store is served on a unix socket in the data dir's 0700 `run` folder (issue 49).
      expect(proc.output()).toContain(`postgres://postgres@${encodeURIComponent(path.join(dataDir, 'run'))}/postgres`);
      expect(await proc.stop('SIGTERM')).toBe(0);
    } finally {
      proc.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
