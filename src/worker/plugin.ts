/**
 * `--plugin <file>`: a module the operator writes, giving the worker what only the application
 * knows. Today that is `emailLookup(userId)` (B3–B5). Loaded once at start; anything unusable
 * stops the start with one line naming the file.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EmailLookup } from '../notify/emailCache.ts';
import { WorkerPluginError } from '../contract/errors.ts';

export type WorkerPlugin = { emailLookup: EmailLookup };

const USAGE = 'export async function emailLookup(userId) { … } (or a default export { emailLookup })';

/** Imports `file` (relative to `cwd`) and returns its `emailLookup`: a named export, or a property of the default export. */
export async function loadWorkerPlugin(file: string, cwd = process.cwd()): Promise<WorkerPlugin> {
  const absolute = path.resolve(cwd, file);
  if (!existsSync(absolute)) throw new WorkerPluginError(`--plugin ${file}: no such file (${absolute})`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (err) {
    // The first line only: enough to fix a syntax or import error, no stack of the worker's own code.
    const reason = err instanceof Error ? `${err.name}: ${err.message.split('\n')[0]}` : 'it threw while loading';
    throw new WorkerPluginError(`--plugin ${file} could not be loaded: ${reason}`);
  }
  const fromDefault = typeof mod.default === 'object' && mod.default !== null ? (mod.default as Record<string, unknown>).emailLookup : undefined;
  const emailLookup = mod.emailLookup ?? fromDefault;
  if (typeof emailLookup !== 'function') {
    throw new WorkerPluginError(`--plugin ${file} exports no emailLookup function; expected ${USAGE}`);
  }
  return { emailLookup: (userId) => Promise.resolve((emailLookup as (id: string) => unknown)(userId)).then(asEmail) };
}

/** B3: only a non-empty string is an email; anything else the plugin returns is "none". */
function asEmail(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
