/**
 * The worker's own limit, HOOKRELAY_CONCURRENCY attempts at once: a FIFO semaphore. BullMQ runs a
 * few more jobs than this (the wait allowance, admission.ts), so the ones beyond it wait here
 * for a slot, already fetched.
 */
export type DeliverySlots = {
  /** true: a slot is yours (release it); false: closed (give the job back). Synchronous when one is free. */
  acquire(): boolean | Promise<boolean>;
  release(): void;
  /** Jobs waiting for a slot now. */
  waiting(): number;
  /** Waiters and later acquires get false. */
  close(): void;
};

export function createDeliverySlots(size: number): DeliverySlots {
  let free = size;
  let closed = false;
  const queue: Array<(ok: boolean) => void> = [];
  return {
    acquire() {
      if (closed) return false;
      if (free > 0) {
        free -= 1;
        return true;
      }
      return new Promise<boolean>((resolve) => queue.push(resolve));
    },
    release() {
      const next = queue.shift();
      if (next) next(true);
      else free += 1;
    },
    waiting: () => queue.length,
    close() {
      closed = true;
      for (const resolve of queue.splice(0)) resolve(false);
    },
  };
}
