import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('examples/approvals.ts (docs/approvals.md) runs as written', () => {
  it('APR-2 (A2): pending → approved by a person → the resumed identical call runs once; the same call again and a changed call wait for a new decision', async () => {
    const env = { ...process.env };
    delete env.DATABASE_URL; // the embedded store in a temporary folder, as a first-time reader runs it
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/approvals.ts'], { cwd: ROOT, timeout: 60_000, env });
    expect(stdout.trim().split('\n')).toEqual([
      'run 1: approval pending for delete_file /reports/2025.csv (the deny stands until a person decides)',
      'approver: approved by alice (old report)',
      'run 2 (resumed, identical call): delete_file ran; files deleted so far: 1',
      'run 3 (the same call again): approval pending for delete_file /reports/2025.csv (the deny stands until a person decides)',
      'run 4 (arguments changed): approval pending for delete_file / (the deny stands until a person decides)',
      'pending approvals: 1; the approved one was applied: applied',
    ]);
  }, 90_000);
});
