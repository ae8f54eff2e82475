import { startDeliveryWorker, type StartDeliveryWorkerOptions } from './startDeliveryWorker.ts';

/** Run the worker until SIGINT/SIGTERM, then stop cleanly (Q9); the caller exits 0. */
export async function runDeliveryWorkerUntilSignal(options: StartDeliveryWorkerOptions = {}): Promise<void> {
  const running = await startDeliveryWorker(options);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await running.stop();
}
