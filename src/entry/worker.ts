/**
 * `hookrelay/worker`: the delivery worker to run in your own process (what BullMQ users expect:
 * their own worker file), e.g. to give it an email look-up for `userEmail` (B3–B5).
 */
export {
  startDeliveryWorker,
  WORKER_APPLICATION_NAME,
  WORKER_POOL_SIZE,
  type StartDeliveryWorkerOptions,
  type RunningDeliveryWorker,
} from '../worker/startDeliveryWorker.ts';
export { runDeliveryWorkerUntilSignal } from '../worker/runUntilSignal.ts';
export { loadWorkerPlugin, type WorkerPlugin } from '../worker/plugin.ts';
export { WorkerPluginError } from '../contract/errors.ts';
