/**
 * The programmatic worker (the future `hookrelay/worker` entry). Self-contained: it pulls in
 * BullMQ, Redis and Postgres clients, which the dispatcher-only library does not need.
 */
export {
  startDeliveryWorker,
  withApplicationName,
  WORKER_APPLICATION_NAME,
  WORKER_POOL_SIZE,
  type StartDeliveryWorkerOptions,
  type RunningDeliveryWorker,
} from './startDeliveryWorker.ts';
export { loadWorkerPlugin, WorkerPluginError, type WorkerPlugin } from './plugin.ts';
export { runDeliveryWorkerUntilSignal } from './runUntilSignal.ts';
