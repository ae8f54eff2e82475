/**
 * UX-1 (Q9): Ctrl-C in a terminal reaches every process of the foreground group, and `npm start`
 * forwards it to its child as well: the worker gets SIGINT twice. It stops once, cleanly, exits 0
 * and its last line is the `stopped:` line (before, the second SIGINT found no listener and Node's
 * default ended it with 130 in the middle of the stop).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, type TestStore } from '../support/db.ts';
import { ROOT } from '../support/hookrelayProcess.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';

describe('UX-1 signals handled once (Q9)', () => {
  let db: TestStore;
  const queues: string[] = [];
  beforeAll(async () => {
    db = await createTestStore('ux1_signals');
  });
  afterAll(async () => {
    for (const q of queues) await deleteKeys(queueKeys(q));
    await db.cleanup();
  });

  async function sigintTwiceToGroup(command: string, args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
    const queue = `ux1-${randomBytes(3).toString('hex')}`;
    queues.push(queue);
    const child = spawn(command, args, {
      cwd: ROOT,
      // Its own process group, as a terminal's foreground job: a group signal reaches npm and node.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        HOOKRELAY_QUEUE: queue,
        HOOKRELAY_HTTP_PORT: '0',
        HOOKRELAY_MIGRATE: 'false',
        LOG_LEVEL: 'info',
      },
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      const deadline = Date.now() + 45_000;
      while (!/"msg":"ready"/.test(output) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
      expect(output).toMatch(/"msg":"ready"/);
      // Back to back, as a terminal's Ctrl-C and npm's forward arrive (a stop with nothing in flight
      // can end before a later one: then there is no group left to signal).
      process.kill(-(child.pid as number), 'SIGINT');
      try {
        process.kill(-(child.pid as number), 'SIGINT');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
      return { ...(await exited), output };
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGKILL');
    }
  }

  const lastLine = (output: string) =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string })
      .at(-1);

  it('UX-1: SIGINT twice to the `npm start` process group → exit 0 and the stopped line last (Q9)', async () => {
    const { code, signal, output } = await sigintTwiceToGroup('npm', ['start', '--silent']);
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(lastLine(output)?.msg).toMatch(/^stopped: /);
  }, 60_000);

  it('UX-1: SIGINT twice to plain `node bin/hookrelay.mjs start` → exit 0 and the stopped line last (Q9)', async () => {
    const { code, signal, output } = await sigintTwiceToGroup(process.execPath, [path.join(ROOT, 'bin/hookrelay.mjs'), 'start']);
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(lastLine(output)?.msg).toMatch(/^stopped: /);
  }, 60_000);
});
