/**
 * The delivery worker process, as deployed: the Dockerfile's CMD and docker-compose's `worker`
 * run its compiled form (`node dist/workers/delivery.js`). Settings come from the environment
 * (config/settings.ts); `runDeliveryWorkerUntilSignal` opens the store (migrating unless
 * HOOKRELAY_MIGRATE=false), starts the queue worker and its HTTP server, and stops cleanly on
 * SIGTERM / SIGINT (Q9). `hookrelay worker` runs the same function with its flags on top.
 *
 * It imports only the public `hookrelay/worker` entry — what a user's own worker file does
 * (the package resolves its own name; in this repository tsconfig.json maps it to src/).
 */
import { runDeliveryWorkerUntilSignal } from 'hookrelay/worker';

try {
  // Q9: 0 after a clean stop, 1 when deliveries were cut off at the bound (their rows are the reconciler's).
  process.exitCode = (await runDeliveryWorkerUntilSignal()) ? 0 : 1;
} catch (error) {
  // One line, as the CLI prints it; a configuration error is the operator's to fix (exit 2, as `hookrelay worker`).
  const coded = typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string';
  process.stderr.write(`hookrelay: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = coded ? 2 : 1;
}
// Exit rather than wait for the event loop to empty: no stray handle keeps a stopped worker alive.
process.exit();
