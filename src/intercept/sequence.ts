/**
 * Where emission sequence numbers come from. `next` returns
 * the number for the session's next emission; it may be async (a store that
 * resumes after the highest persisted sequence).
 */
export type SequenceProvider = { next(sessionId: string): number | Promise<number> };

/** In-memory per-session counters starting at `start` (0 = the `agent_startup` value). */
export function createMemorySequenceProvider(start = 0): SequenceProvider {
  const counters = new Map<string, number>();
  return {
    next(sessionId) {
      const n = counters.get(sessionId) ?? start;
      counters.set(sessionId, n + 1);
      return n;
    },
  };
}

/**
 * Serializes calls per session so concurrent emissions receive their numbers
 * in call order, even from an async provider: no two emissions share a
 * number and none overtakes an earlier one (assigned atomically).
 */
export class SessionSequencer {
  readonly #provider: SequenceProvider;
  readonly #tails = new Map<string, Promise<unknown>>();

  constructor(provider: SequenceProvider) {
    this.#provider = provider;
  }

  assign(sessionId: string): Promise<number> {
    const previous = this.#tails.get(sessionId) ?? Promise.resolve();
    const next = previous.then(() => this.#provider.next(sessionId));
    const tail = next.catch(() => undefined);
    this.#tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return next.then((n) => {
      if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('sequence provider returned an invalid sequence');
      return n;
    });
  }
}
