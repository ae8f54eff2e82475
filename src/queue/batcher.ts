/**
 * Group commit: concurrent callers submit items; items that arrive while a flush is running are
 * sent together in the next one. At low load an item goes out on the next tick (no added
 * latency); under load each statement carries many rows, so Postgres is not the bottleneck.
 * A caller's promise settles only when its batch's statement settled (nothing is assumed written).
 */

/** A result that fails only its own item: the batch's other callers still get theirs. */
export class BatchItemFailure {
  constructor(readonly error: unknown) {}
}

export type BatcherOptions<I, O> = {
  /** Runs one batch; returns one result (or BatchItemFailure) per item, in order. A throw fails every item. */
  run(items: I[]): Promise<Array<O | BatchItemFailure>>;
  /** Most items per statement. */
  maxBatch: number;
  /** Flushes allowed in flight at once (pipelining over the pool). */
  maxConcurrent: number;
};

export type Batcher<I, O> = {
  submit(item: I): Promise<O>;
  /** Resolves once everything submitted so far has been flushed (settled). */
  drain(): Promise<void>;
};

type Pending<I, O> = { item: I; resolve(value: O): void; reject(error: unknown): void };

export function createBatcher<I, O>(options: BatcherOptions<I, O>): Batcher<I, O> {
  let queue: Pending<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;
  const idle: Array<() => void> = [];

  const settleIdle = () => {
    if (inFlight === 0 && queue.length === 0) for (const wake of idle.splice(0)) wake();
  };

  const flush = () => {
    scheduled = false;
    while (queue.length > 0 && inFlight < options.maxConcurrent) {
      const batch = queue.slice(0, options.maxBatch);
      queue = queue.slice(batch.length);
      inFlight += 1;
      options
        .run(batch.map((p) => p.item))
        .then(
          (results) => {
            for (const [i, p] of batch.entries()) {
              const result = results[i];
              if (result instanceof BatchItemFailure) p.reject(result.error);
              else p.resolve(result as O);
            }
          },
          (error: unknown) => {
            for (const p of batch) p.reject(error);
          },
        )
        .finally(() => {
          inFlight -= 1;
          if (queue.length > 0) schedule();
          else settleIdle();
        });
    }
  };

  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    // setImmediate: items submitted in the same turn of the event loop share one statement.
    setImmediate(flush);
  };

  return {
    submit(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (inFlight < options.maxConcurrent) schedule();
      });
    },
    drain() {
      if (inFlight === 0 && queue.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}
