/**
 * Runs the real worker process (`node bin/hookrelay.mjs worker`) for e2e and chaos tests and
 * collects its output. The environment is exactly what is passed (plus PATH/HOME), so a
 * variable set only for the worker (a template secret) never leaks into the test process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../../..');
const READY = /"msg":"ready"/;

export type WorkerProcess = {
  child: ChildProcess;
  output(): string;
  /** Resolves once the process logged "ready" (rejects when it exits first or after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
};

export function spawnWorker(env: Record<string, string>, args: string[] = []): WorkerProcess {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/hookrelay.mjs'), 'worker', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!READY.test(out)) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker exited before ready:\n${out}`);
        if (Date.now() > deadline) throw new Error(`worker not ready within ${timeoutMs} ms:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}
