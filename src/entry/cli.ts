/**
 * The `hookrelay` bin's composition root: the admin CLI with the worker plugged in. The worker's
 * modules load only when `start` or `worker` runs, so `hookrelay --help` and the admin commands
 * never pay for them — and the CLI layer itself never imports the worker. `hookrelay worker` runs
 * the function the deployed worker process (workers/delivery.ts) runs, with the CLI's flags on top.
 */
import { runCli as runAdminCli, type WorkerRunner } from '../cli/main.ts';
import { EXIT } from '../cli/exitCodes.ts';

const runWorker: WorkerRunner = async ({ plugin: pluginFile, ...options }) => {
  // Through the `hookrelay/worker` entry, as workers/delivery.ts (the deployed process) does.
  const { loadWorkerPlugin, runDeliveryWorkerUntilSignal } = await import('./worker.ts');
  const plugin = pluginFile !== undefined ? await loadWorkerPlugin(pluginFile) : undefined;
  const clean = await runDeliveryWorkerUntilSignal({ ...options, ...(plugin ? { emailLookup: plugin.emailLookup } : {}) });
  // Q9: exit 1 when deliveries were cut off at the bound or the ledger could not be flushed (the last log line says which).
  if (!clean) process.exitCode = EXIT.partial;
};

export function runCli(argv: string[] = process.argv): Promise<never> {
  return runAdminCli(argv, { runWorker });
}
