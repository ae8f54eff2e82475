/**
 * `hookrelay <command>` (or `npm start`) as a child process, for the e2e and chaos tests: output
 * captured, readiness and exit awaited. With `inheritEnv: false` the environment is exactly what
 * is passed (plus PATH/HOME), so a variable set only for the worker (a template secret) never
 * leaks in from the test process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const READY = /"msg":"ready"/;

export type HookrelayProcess = {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves once the output matches, or the process exits, or `timeoutMs` passes. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<boolean>;
  /** Resolves once the process logged "ready"; rejects when it exits first or after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  /** Sends the signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Sends the signal (default SIGKILL) if the process still runs; for `finally` and chaos. */
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<number | null>;
};

export type StartOptions = { npm?: boolean; inheritEnv?: boolean };

export function startHookrelay(args: string[], env: NodeJS.ProcessEnv, options: StartOptions = {}): HookrelayProcess {
  const base = options.inheritEnv === false ? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' } : process.env;
  const spawnOptions = { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
  const child = options.npm
    ? spawn('npm', ['start', '--silent'], spawnOptions)
    : spawn(process.execPath, [path.join(ROOT, 'bin/hookrelay.mjs'), ...args], spawnOptions);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const running = () => child.exitCode === null && child.signalCode === null;
  const waitForOutput = async (pattern: RegExp, timeoutMs = 45_000): Promise<boolean> => {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(output) && Date.now() < deadline && running()) await new Promise((r) => setTimeout(r, 50));
    return pattern.test(output);
  };
  return {
    child,
    output: () => output,
    waitForOutput,
    async ready(timeoutMs = 30_000) {
      if (await waitForOutput(READY, timeoutMs)) return;
      throw new Error(`${running() ? `not ready within ${timeoutMs} ms` : 'exited before ready'}:\n${output}`);
    },
    async stop(signal = 'SIGTERM') {
      if (running()) child.kill(signal);
      return exited;
    },
    kill(signal = 'SIGKILL') {
      if (running()) child.kill(signal);
    },
    exited,
  };
}

/** The delivery worker with exactly the given environment (see `inheritEnv: false`). */
export function spawnWorker(env: Record<string, string>, args: string[] = []): HookrelayProcess {
  return startHookrelay(['worker', ...args], { LOG_LEVEL: 'info', ...env }, { inheritEnv: false });
}

export type CliRun = { code: number | null; stdout: string; stderr: string };

/**
 * The bin run to completion with exactly `env` (plus PATH and HOME, so nothing leaks in from the
 * test process), in `cwd` (default the repository): its exit code and both outputs.
 */
export function runCli(args: string[], env: Record<string, string>, cwd: string = ROOT): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/hookrelay.mjs'), ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
