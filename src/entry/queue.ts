/**
 * `hookrelay/queue`: the durable-delivery producer a server app enqueues with (Q1, Q1a, Q2, Q8).
 * Loads BullMQ, ioredis and pg at import; the root `hookrelay` entry's factory of the same name
 * loads this module on first use.
 */
export { createHookProducer, DEFAULT_QUEUE_TIMEOUT_MS } from '../queue/producer.ts';
export { PayloadTooLargeError } from '../contract/errors.ts';
export { EventNotAcceptedError } from '../contract/errors.ts';
export { createEndpointGuard, GUARD_REFRESH_MS, type ClosableEndpointGuard, type EndpointGuardOptions } from '../isolation/endpointGuard.ts';
export {
  DEFAULT_QUEUE_NAME,
  DEFAULT_QUEUE_PREFIX,
  DEFAULT_REDIS_URL,
  DEFAULT_MAX_PAYLOAD_BYTES,
  type DeliveryJobData,
  type DeliveryJobAttempt,
  type EnqueueInput,
  type EnqueueResult,
  type EnqueueManyResult,
  type HookProducer,
  type HookProducerOptions,
  type SpoolStatus,
} from '../queue/types.ts';
