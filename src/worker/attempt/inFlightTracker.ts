/**
 * Q12 without a write per attempt: attempts are tracked in memory, and only those still running
 * after `afterMs` are marked in_flight (with the lease) in one batched statement per sweep. A fast
 * attempt — nearly all of them — costs a Map insert and delete; its row goes straight from
 * queued/retrying to its outcome. Recovery never depends on the mark: a row whose job Redis lost
 * is queued/retrying (or in_flight with an expired lease) and has no live job, which is what the
 * reconciler looks for.
 */
import type { InFlightMark } from '../../store/deliveriesRepo.ts';

/** An attempt running longer than this gets its in_flight row. */
const IN_FLIGHT_MARK_AFTER_MS = 1_000;

export type InFlightTracker = {
  begin(key: string, mark: InFlightMark): void;
  end(key: string): void;
  stop(): void;
};

export function createInFlightTracker(options: {
  mark(marks: InFlightMark[]): Promise<void>;
  afterMs?: number;
  onError(error: unknown): void;
}): InFlightTracker {
  const afterMs = options.afterMs ?? IN_FLIGHT_MARK_AFTER_MS;
  const running = new Map<string, { mark: InFlightMark; since: number; marked: boolean }>();
  const sweep = () => {
    const now = Date.now();
    const due: InFlightMark[] = [];
    for (const entry of running.values()) {
      if (!entry.marked && now - entry.since >= afterMs) {
        entry.marked = true;
        due.push(entry.mark);
      }
    }
    if (due.length > 0) options.mark(due).catch(options.onError);
  };
  const timer = setInterval(sweep, Math.max(50, Math.floor(afterMs / 2)));
  timer.unref();
  return {
    begin(key, mark) {
      running.set(key, { mark, since: Date.now(), marked: false });
    },
    end(key) {
      running.delete(key);
    },
    stop() {
      clearInterval(timer);
      running.clear();
    },
  };
}
