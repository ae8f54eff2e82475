import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('examples/interception.ts (the docs/tour.md example) runs as written', () => {
  it('I3/I4: the remote transform rewrites the args, the local deny blocks, one record per emission', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/interception.ts'], { cwd: ROOT, timeout: 30_000 });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('search/web  → {"status":"allow","args":{"q":"weather safe:on"}}');
    expect(lines[1]).toBe('shell/exec  → blocked policy.destructive_shell');
    expect(lines.slice(2)).toEqual([
      'record #0 agent_startup  allow',
      'record #1 pre_tool_call  transform',
      'record #2 pre_tool_call  deny (policy.destructive_shell)',
      'record #3 agent_shutdown allow',
    ]);
  }, 40_000);
});
