/**
 * One log line per key (a reason, a client address) per window instead of one per occurrence: a
 * stranger sending 1,000 unsigned callbacks, or a client reconnecting every few hundred ms while
 * Redis is down, would otherwise fill the log. The first occurrence in a window is written at once
 * (`repeats` 0); the ones after it are counted and written as one summary line when the window
 * ends (`repeats` n), with the fields of the latest occurrence.
 */

/** Writes one line; `repeats` is 0 for the first occurrence, else how many more the window saw. */
type LimitedLine = (repeats: number) => void;

export type LogLimiter = {
  /** Writes `line` now, or counts it when its key already wrote in this window. */
  (key: string, line: LimitedLine): void;
  /** Writes the pending summaries now (a stop) and forgets every key. */
  flush(): void;
};

export type LogLimiterOptions = {
  /** The window: at most two lines per key in it (the first, and the summary at its end). */
  windowMs: number;
  /** Keys remembered at once; the oldest is summarised and forgotten past it (addresses are unbounded). */
  maxKeys?: number;
  now?: () => number;
};

type Entry = { endsAt: number; repeats: number; line: LimitedLine };

const DEFAULT_MAX_KEYS = 1_000;

export function createLogLimiter(options: LogLimiterOptions): LogLimiter {
  const now = options.now ?? Date.now;
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  const entries = new Map<string, Entry>();
  let timer: NodeJS.Timeout | undefined;

  const summarise = (key: string, entry: Entry) => {
    entries.delete(key);
    if (entry.repeats > 0) entry.line(entry.repeats);
  };
  const sweep = () => {
    timer = undefined;
    const t = now();
    for (const [key, entry] of entries) if (entry.endsAt <= t) summarise(key, entry);
    schedule();
  };
  // One timer for all keys, at the earliest window end; unref'd so it never holds a process open.
  function schedule(): void {
    if (timer !== undefined || entries.size === 0) return;
    let next = Number.POSITIVE_INFINITY;
    for (const entry of entries.values()) next = Math.min(next, entry.endsAt);
    timer = setTimeout(sweep, Math.max(0, next - now()));
    timer.unref();
  }

  const limiter = ((key, line) => {
    const t = now();
    const entry = entries.get(key);
    if (entry && t < entry.endsAt) {
      entry.repeats++;
      entry.line = line;
      return;
    }
    if (entry) summarise(key, entry);
    if (entries.size >= maxKeys) {
      const [oldestKey, oldest] = entries.entries().next().value as [string, Entry];
      summarise(oldestKey, oldest);
    }
    entries.set(key, { endsAt: t + options.windowMs, repeats: 0, line });
    line(0);
    schedule();
  }) as LogLimiter;
  limiter.flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const [key, entry] of entries) summarise(key, entry);
  };
  return limiter;
}
