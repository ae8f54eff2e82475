/**
 * The worker's calls to the endpoint gate, coalesced per endpoint so a delivery costs about one
 * script call instead of two: the admits of one event-loop turn go out together, carrying the
 * releases that are pending (releases alone go out after RELEASE_HOLD_MS).
 */
import type { Admission, AdmitInput, EndpointGate, Release, ReleaseItem } from './endpointGate.ts';

/** Batch size bound per script call (ARGV stays small; a larger turn makes several calls). */
const BATCH_MAX = 64;
/**
 * A release waits this long for an admit of the same endpoint to ride along with (the next job
 * usually starts within it), so a delivery costs one script call, not two.
 */
const RELEASE_HOLD_MS = 2;

type Waiter<O> = { resolve(o: O): void; reject(e: unknown): void };
type Pending = {
  releases: (ReleaseItem & Waiter<Release>)[];
  admits: (Omit<AdmitInput, 'key'> & Waiter<Admission>)[];
};

/**
 * The gate calls of one endpoint, coalesced: the admits of one event-loop turn go out together,
 * carrying the releases that are pending (releases alone go out after RELEASE_HOLD_MS). Each
 * caller gets its own answer; a failed call rejects every caller of its batch.
 */
export function createExchangeBatcher(gate: EndpointGate) {
  const pending = new Map<string, Pending>();
  let immediate = false;
  let timer: NodeJS.Timeout | undefined;
  const entry = (key: string): Pending => {
    let p = pending.get(key);
    if (!p) {
      p = { releases: [], admits: [] };
      pending.set(key, p);
    }
    return p;
  };
  const send = (key: string, p: Pending): void => {
    while (p.releases.length > 0 || p.admits.length > 0) {
      const releases = p.releases.splice(0, BATCH_MAX);
      const admits = p.admits.splice(0, BATCH_MAX);
      gate
        .exchange(
          key,
          releases.map((r) => ({ token: r.token, outcome: r.outcome })),
          admits.map((a) => ({ token: a.token, leaseMs: a.leaseMs, cap: a.cap, rate: a.rate })),
        )
        .then(
          (answer) => {
            for (const [i, r] of releases.entries()) r.resolve(answer.releases[i]!);
            for (const [i, a] of admits.entries()) a.resolve(answer.admissions[i]!);
          },
          (error: unknown) => {
            for (const w of [...releases, ...admits]) w.reject(error);
          },
        );
    }
  };
  const flushAdmits = (): void => {
    immediate = false;
    for (const [key, p] of pending) {
      if (p.admits.length === 0) continue;
      send(key, p);
      pending.delete(key);
    }
  };
  const flushAll = (): void => {
    timer = undefined;
    for (const [key, p] of pending) send(key, p);
    pending.clear();
  };
  return {
    admit(key: string, input: Omit<AdmitInput, 'key'>): Promise<Admission> {
      return new Promise((resolve, reject) => {
        entry(key).admits.push({ ...input, resolve, reject });
        if (!immediate) {
          immediate = true;
          setImmediate(flushAdmits);
        }
      });
    },
    release(key: string, item: ReleaseItem): Promise<Release> {
      return new Promise((resolve, reject) => {
        entry(key).releases.push({ ...item, resolve, reject });
        timer ??= setTimeout(flushAll, RELEASE_HOLD_MS);
      });
    },
  };
}
