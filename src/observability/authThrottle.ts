/**
 * Throttles guesses at a credential (the console token at the sign-in form, or as a bearer), per
 * client address and over all addresses together. Each address gets a few free attempts per
 * minute; past them each further attempt waits its turn, the wait doubling with every attempt
 * (1 s, 2 s, 4 s … up to a cap), and an attempt whose turn is further away than a short wait is
 * refused at once with the seconds to wait (429, Retry-After) — the credential is then never
 * checked, so parallel connections gain nothing. All addresses together get the same treatment
 * with a larger allowance, against a guesser spread over many addresses.
 *
 * Attempts are counted when admitted, as if they failed; a right credential undoes its count and
 * clears its address, one never checked (its form unreadable) undoes its count. Sign-in forms and bearer tokens are throttled apart: a scraper holding a
 * stale bearer token never locks the operator out of the browser sign-in. IPv6 addresses are
 * throttled by their /64 (one host usually holds the whole /64). State lives in this process.
 */
import ipaddr from 'ipaddr.js';

export type CredentialKind = 'signin' | 'bearer';

export type ThrottleRule = {
  /** Attempts admitted at once within `windowMs` before turns begin. */
  free: number;
  /** The wait before the first turn; doubled for each later one. */
  baseMs: number;
  /** The longest wait between two turns. */
  maxBackoffMs: number;
  /** An attempt waits for its turn at most this long; further away, it is refused. */
  maxWaitMs: number;
  /** A key quiet for this long is forgotten. */
  windowMs: number;
};

/** Per address: 5 attempts a minute, then 1 s, 2 s, 4 s … up to a minute between attempts. */
const PER_ADDRESS_RULE: ThrottleRule = { free: 5, baseMs: 1_000, maxBackoffMs: 60_000, maxWaitMs: 5_000, windowMs: 60_000 };
/** All addresses together: 50 attempts a minute, then 250 ms, 500 ms … up to 5 s between attempts. */
const GLOBAL_RULE: ThrottleRule = { free: 50, baseMs: 250, maxBackoffMs: 5_000, maxWaitMs: 5_000, windowMs: 60_000 };
/** Addresses remembered per kind; past it the quietest is forgotten (the global rule still holds). */
const MAX_ADDRESSES = 10_000;

type Admission =
  | {
      ok: true;
      /** Milliseconds this attempt waited for its turn (0 when free). */
      waitedMs: number;
      /** The attempts this address made in the window, this one included. */
      attempts: number;
      /**
       * Call once: `right` undoes the count and clears the address; `wrong` keeps it; `unjudged`
       * (the credential never got checked: its form could not be read) undoes the count only.
       */
      settle(outcome: 'right' | 'wrong' | 'unjudged'): void;
    }
  | { ok: false; retryAfterSeconds: number; scope: 'address' | 'global' };

export type AuthThrottle = {
  /** Waits for this attempt's turn, or refuses it. */
  admit(kind: CredentialKind, address: string | undefined): Promise<Admission>;
};

type State = { attempts: number; nextAt: number; lastAt: number };

/** The key an address is throttled under: IPv4 (mapped or not) as is, IPv6 by its /64. */
export function throttleKey(address: string | undefined): string {
  if (address === undefined || !ipaddr.isValid(address)) return 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}

/** One rule over many keys: the turn an attempt gets, or how far away it is. */
function createTurns(rule: ThrottleRule, maxKeys: number) {
  const states = new Map<string, State>();
  const live = (key: string, t: number): State => {
    const s = states.get(key);
    if (s && t - s.lastAt < rule.windowMs) return s;
    if (s) states.delete(key);
    if (states.size >= maxKeys) states.delete(states.keys().next().value as string);
    const fresh = { attempts: 0, nextAt: 0, lastAt: t };
    states.set(key, fresh);
    return fresh;
  };
  return {
    /** The ms until this key's next turn (0: now), without taking it. */
    waitFor(key: string, t: number): number {
      const s = live(key, t);
      return s.attempts < rule.free ? 0 : Math.max(0, s.nextAt - t);
    },
    /** Takes the next turn (at `t + wait`): the attempts so far, this one included. */
    take(key: string, t: number, wait: number): number {
      const s = live(key, t);
      s.attempts++;
      s.lastAt = t + wait;
      // Re-inserted: the Map's order is then the order of last use (the oldest is forgotten first).
      states.delete(key);
      states.set(key, s);
      const over = s.attempts - rule.free;
      if (over >= 0) s.nextAt = t + wait + Math.min(rule.baseMs * 2 ** over, rule.maxBackoffMs);
      return s.attempts;
    },
    undo(key: string): void {
      const s = states.get(key);
      if (s) s.attempts = Math.max(0, s.attempts - 1);
    },
    clear(key: string): void {
      states.delete(key);
    },
  };
}

export function createAuthThrottle(
  options: { perAddress?: ThrottleRule; global?: ThrottleRule; now?: () => number; sleep?: (ms: number) => Promise<void> } = {},
): AuthThrottle {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const perAddress = options.perAddress ?? PER_ADDRESS_RULE;
  const global = options.global ?? GLOBAL_RULE;
  const kinds = new Map<CredentialKind, { addresses: ReturnType<typeof createTurns>; all: ReturnType<typeof createTurns> }>();
  const turnsOf = (kind: CredentialKind) => {
    let k = kinds.get(kind);
    if (!k) {
      k = { addresses: createTurns(perAddress, MAX_ADDRESSES), all: createTurns(global, 1) };
      kinds.set(kind, k);
    }
    return k;
  };

  return {
    async admit(kind, address) {
      const key = throttleKey(address);
      const { addresses, all } = turnsOf(kind);
      const t = now();
      const mine = addresses.waitFor(key, t);
      const everyone = all.waitFor('*', t);
      const wait = Math.max(mine, everyone);
      if (mine > perAddress.maxWaitMs) return { ok: false, retryAfterSeconds: Math.ceil(mine / 1000), scope: 'address' };
      if (everyone > global.maxWaitMs) return { ok: false, retryAfterSeconds: Math.ceil(everyone / 1000), scope: 'global' };
      const attempts = addresses.take(key, t, wait);
      all.take('*', t, wait);
      if (wait > 0) await sleep(wait);
      let settled = false;
      return {
        ok: true,
        waitedMs: wait,
        attempts,
        settle(outcome) {
          if (settled) return;
          settled = true;
          if (outcome === 'wrong') return;
          if (outcome === 'right') addresses.clear(key);
          else addresses.undo(key);
          all.undo('*');
        },
      };
    },
  };
}
