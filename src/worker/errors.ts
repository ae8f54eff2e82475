/** The errors of src/worker/. */
import { HookrelayError } from '../contract/hookrelayError.ts';

/** `--plugin <file>` is unusable (missing, fails to load, no emailLookup): the start stops with one line naming the file. */
export class WorkerPluginError extends HookrelayError {
  readonly code = 'HOOKRELAY_WORKER_PLUGIN_INVALID' as const;
  override readonly name = 'WorkerPluginError';
}
