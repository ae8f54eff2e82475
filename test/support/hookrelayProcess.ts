/** `hookrelay <command>` as a child process, for the e2e tests: output captured, exit awaited. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export type HookrelayProcess = {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves once the output matches, or the process exits, or `timeoutMs` passes. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<boolean>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** SIGKILL if still running (for `finally`). */
  kill(): void;
  exited: Promise<number | null>;
};

/** Runs `node bin/hookrelay.mjs …args` (or `npm start` with `npm: true`) with `env` over process.env. */
export function startHookrelay(args: string[], env: NodeJS.ProcessEnv, options: { npm?: boolean } = {}): HookrelayProcess {
  const child = options.npm
    ? spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [path.join(ROOT, 'bin/hookrelay.mjs'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    async waitForOutput(pattern, timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      return pattern.test(output);
    },
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    exited,
  };
}
