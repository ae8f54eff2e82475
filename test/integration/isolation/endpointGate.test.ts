/**
 * The endpoint gate's Lua scripts on the real Redis: the per-endpoint cap, the GCRA rate limit
 * and the circuit breaker, shared by two gate instances on two connections (two workers).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Admission, type BreakerPolicy, createEndpointGate, DEFAULT_BREAKER_POLICY, type EndpointGate } from '../../../src/isolation/endpointGate.ts';
import { deleteKeys, listKeys } from '../../support/redisKeys.ts';
import { TEST_REDIS_URL, waitFor } from '../queue/harness.ts';

const LONG_LEASE_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

describe('endpoint gate (Redis): cap, rate limit and circuit breaker across workers', () => {
  let r1: Redis;
  let r2: Redis;
  let prefix: string;
  let seq = 0;
  const token = (label = 't') => `${label}-${++seq}`;

  beforeAll(() => {
    r1 = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    r2 = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(() => {
    r1.disconnect();
    r2.disconnect();
  });
  beforeEach(() => {
    prefix = `test-ep-${randomUUID()}`;
  });
  afterEach(async () => {
    await deleteKeys(`${prefix}:*`, r1);
  });

  /** Two gates with one policy on two connections: two workers sharing the endpoint state. */
  const twoGates = (policy: Partial<BreakerPolicy> = {}): [EndpointGate, EndpointGate] => [
    createEndpointGate(r1, { keyPrefix: prefix, policy }),
    createEndpointGate(r2, { keyPrefix: prefix, policy }),
  ];
  const redisNow = async () => {
    const [s, us] = await r1.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const admitOn = (gate: EndpointGate, key: string, t: string, extra: { cap?: number; rate?: number; leaseMs?: number } = {}) =>
    gate.admit({ key, token: t, leaseMs: extra.leaseMs ?? LONG_LEASE_MS, cap: extra.cap ?? 0, rate: extra.rate ?? 0 });
  /** Admits and fails `n` attempts one after the other; returns the transitions reported. */
  const failTimes = async (gate: EndpointGate, key: string, n: number) => {
    const transitions: (string | undefined)[] = [];
    for (let i = 0; i < n; i++) {
      const t = token('f');
      expect((await admitOn(gate, key, t)).admitted).toBe(true);
      transitions.push((await gate.release(key, t, 'fail')).transition);
    }
    return transitions;
  };
  const waitUntilMs = async (atMs: number) => {
    // Redis and this process share the machine's clock; a few ms of margin covers rounding.
    await sleep(atMs - Date.now() + 15);
    await waitFor(async () => (await redisNow()) >= atMs, 2_000, `redis time ≥ ${atMs}`);
  };

  describe('concurrency cap', () => {
    it('cap 2 holds across two workers: the third admit is busy, a release frees one slot', async () => {
      const [g1, g2] = twoGates();
      const key = 'https://cap.example.com/hook';
      const [t1, t2, t3, t4] = [token(), token(), token(), token()];
      expect(await admitOn(g1, key, t1, { cap: 2 })).toEqual({ admitted: true, inFlight: 1 });
      expect(await admitOn(g2, key, t2, { cap: 2 })).toEqual({ admitted: true, inFlight: 2 });
      expect(await admitOn(g1, key, t3, { cap: 2 })).toEqual({ admitted: false, reason: 'busy', inFlight: 2 });
      expect(await admitOn(g2, key, t4, { cap: 2 })).toEqual({ admitted: false, reason: 'busy', inFlight: 2 });

      // Worker 2 frees worker 1's slot (the holder set is shared); a neutral release changes no breaker state.
      expect(await g2.release(key, t1, 'none')).toEqual({ autoDisable: false });
      expect(await admitOn(g1, key, t3, { cap: 2 })).toEqual({ admitted: true, inFlight: 2 });
      expect(await admitOn(g2, key, t4, { cap: 2 })).toMatchObject({ admitted: false, reason: 'busy' });
      expect((await g1.snapshot(key))?.inFlight).toBe(2);
    });

    it('concurrent admits from two workers never exceed the cap', async () => {
      const [g1, g2] = twoGates();
      const key = 'race';
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => admitOn(i % 2 === 0 ? g1 : g2, key, token(), { cap: 3 })));
      expect(results.filter((r) => r.admitted)).toHaveLength(3);
      expect(results.filter((r) => !r.admitted && r.reason === 'busy')).toHaveLength(9);
      expect((await g2.snapshot(key))?.inFlight).toBe(3);
    });

    it('cap 0 means no cap', async () => {
      const [g1, g2] = twoGates();
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => admitOn(i % 2 === 0 ? g1 : g2, 'uncapped', token(), { cap: 0 })));
      expect(results.every((r) => r.admitted)).toBe(true);
      expect((await g1.snapshot('uncapped'))?.inFlight).toBe(20);
    });

    it('releasing an unknown token frees nothing; a token admitted twice holds one slot', async () => {
      const [g1, g2] = twoGates();
      const t1 = token();
      expect(await admitOn(g1, 'k', t1, { cap: 1 })).toMatchObject({ admitted: true });
      await g2.release('k', 'never-admitted', 'none');
      expect(await admitOn(g2, 'k', token(), { cap: 1 })).toMatchObject({ admitted: false, reason: 'busy' });
      await g2.release('k', t1, 'none');
      const t2 = token();
      expect(await admitOn(g1, 'k', t2, { cap: 2 })).toMatchObject({ admitted: true, inFlight: 1 });
      // The same token again (a re-run of one attempt) refreshes its lease, it takes no second slot.
      await admitOn(g1, 'k', t2, { cap: 2 });
      expect((await g1.snapshot('k'))?.inFlight).toBe(1);
    });

    it('an expired lease (a worker that died) frees its slot', async () => {
      const [g1, g2] = twoGates();
      const key = 'lease';
      const startedAt = Date.now();
      expect(await admitOn(g1, key, token('dead'), { cap: 1, leaseMs: 150 })).toMatchObject({ admitted: true });
      expect(await admitOn(g2, key, token(), { cap: 1 })).toMatchObject({ admitted: false, reason: 'busy', inFlight: 1 });
      let admitted: Admission | undefined;
      await waitFor(async () => (admitted = await admitOn(g2, key, token('after'), { cap: 1 })).admitted, 2_000, 'the lapsed slot to be free');
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(140);
      expect(admitted).toEqual({ admitted: true, inFlight: 1 });
    });

    it('a snapshot counts only live leases', async () => {
      const [g1] = twoGates();
      await admitOn(g1, 'live', token(), { leaseMs: 100 });
      await admitOn(g1, 'live', token(), { leaseMs: LONG_LEASE_MS });
      expect((await g1.snapshot('live'))?.inFlight).toBe(2);
      await waitFor(async () => (await g1.snapshot('live'))?.inFlight === 1, 2_000, 'the short lease to lapse');
    });
  });

  describe('rate limit (GCRA)', () => {
    it('rate 5/s: a burst of 5 goes, the 6th waits ≈200 ms and is admitted once that time has come', async () => {
      const [g1, g2] = twoGates();
      const key = 'https://rate.example.com/hook';
      const burst = [];
      for (let i = 0; i < 5; i++) burst.push(await admitOn(i % 2 === 0 ? g1 : g2, key, token(), { rate: 5 }));
      expect(burst.every((a) => a.admitted)).toBe(true);

      const before = await redisNow();
      const sixth = await admitOn(g2, key, token(), { rate: 5 });
      expect(sixth).toMatchObject({ admitted: false, reason: 'rate', inFlight: 5 });
      const retryAtMs = sixth.admitted ? 0 : (sixth.retryAtMs ?? 0);
      expect(retryAtMs).toBeGreaterThan(before);
      expect(retryAtMs - before).toBeGreaterThanOrEqual(120);
      expect(retryAtMs - before).toBeLessThanOrEqual(201);

      // Not before its time (on either worker)...
      expect(await admitOn(g1, key, token(), { rate: 5 })).toMatchObject({ admitted: false, reason: 'rate' });
      await waitUntilMs(retryAtMs);
      // ...then exactly one more, and the next one waits another interval.
      expect(await admitOn(g1, key, token(), { rate: 5 })).toMatchObject({ admitted: true });
      const next = await admitOn(g2, key, token(), { rate: 5 });
      expect(next).toMatchObject({ admitted: false, reason: 'rate' });
      if (!next.admitted) expect((next.retryAtMs ?? 0) - retryAtMs).toBeGreaterThanOrEqual(150);
    });

    it('a rate below 1/s allows one at a time at the interval (0.5/s → 2 s apart)', async () => {
      const [g1] = twoGates();
      expect(await admitOn(g1, 'slow', token(), { rate: 0.5 })).toMatchObject({ admitted: true });
      const before = await redisNow();
      const second = await admitOn(g1, 'slow', token(), { rate: 0.5 });
      expect(second).toMatchObject({ admitted: false, reason: 'rate' });
      if (!second.admitted) {
        expect((second.retryAtMs ?? 0) - before).toBeGreaterThan(1_900);
        expect((second.retryAtMs ?? 0) - before).toBeLessThanOrEqual(2_001);
      }
    });

    it('a busy refusal spends no rate budget; rate 0 means no limit', async () => {
      const [g1, g2] = twoGates();
      const t1 = token();
      expect(await admitOn(g1, 'both', t1, { cap: 1, rate: 2 })).toMatchObject({ admitted: true });
      for (let i = 0; i < 5; i++) expect(await admitOn(g2, 'both', token(), { cap: 1, rate: 2 })).toMatchObject({ admitted: false, reason: 'busy' });
      await g1.release('both', t1, 'ok');
      // Burst of 2: the second token is still there although five busy refusals came in between.
      expect(await admitOn(g2, 'both', token(), { cap: 1, rate: 2 })).toMatchObject({ admitted: true });

      const many = await Promise.all(Array.from({ length: 30 }, () => admitOn(g1, 'norate', token(), { rate: 0 })));
      expect(many.every((a) => a.admitted)).toBe(true);
    });
  });

  describe('circuit breaker', () => {
    const BREAKER: Partial<BreakerPolicy> = { failureThreshold: 3, minRequests: 1_000, cooldownMs: 300, maxCooldownMs: 1_000, autoDisableMs: 0 };

    it('failureThreshold consecutive failures open it; the transition is reported exactly once across two workers', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'https://down.example.com/hook';
      const tokens = Array.from({ length: 8 }, () => token());
      for (const [i, t] of tokens.entries()) expect((await admitOn(i % 2 === 0 ? g1 : g2, key, t)).admitted).toBe(true);
      const releases = await Promise.all(tokens.map((t, i) => (i % 2 === 0 ? g2 : g1).release(key, t, 'fail')));
      expect(releases.filter((r) => r.transition === 'open')).toHaveLength(1);
      expect(releases.filter((r) => r.transition !== undefined)).toHaveLength(1);
      expect(releases.every((r) => r.autoDisable === false)).toBe(true);

      const snap = await g1.snapshot(key);
      expect(snap).toMatchObject({ key, state: 'open', inFlight: 0, consecutiveFailures: 3, lastSuccessAt: null });
      expect(snap?.lastFailureAt).toBeInstanceOf(Date);
      expect(snap?.failingSince).toBeInstanceOf(Date);
      expect(snap?.openUntil).toBeInstanceOf(Date);
      // Opened at the third failure; the failures that landed while open do not move openUntil.
      expect((snap?.openUntil?.getTime() ?? 0) - (snap?.failingSince?.getTime() ?? 0)).toBeGreaterThanOrEqual(300);
      expect(snap?.openUntil?.getTime() ?? 0).toBeLessThanOrEqual((await redisNow()) + 300);
    });

    it('a success in between resets the consecutive count', async () => {
      const [g1, g2] = twoGates(BREAKER);
      expect(await failTimes(g1, 'flaky', 2)).toEqual([undefined, undefined]);
      const t = token();
      await admitOn(g2, 'flaky', t);
      expect(await g2.release('flaky', t, 'ok')).toEqual({ autoDisable: false });
      expect(await failTimes(g1, 'flaky', 2)).toEqual([undefined, undefined]);
      expect(await g1.snapshot('flaky')).toMatchObject({ state: 'closed', consecutiveFailures: 2, failingSince: expect.any(Date) });
      expect((await failTimes(g2, 'flaky', 1))[0]).toBe('open');
    });

    it("neutral outcomes ('none') never count against the endpoint", async () => {
      const [g1] = twoGates(BREAKER);
      for (let i = 0; i < 6; i++) {
        const t = token();
        await admitOn(g1, 'local', t);
        expect(await g1.release('local', t, 'none')).toEqual({ autoDisable: false });
      }
      expect(await g1.snapshot('local')).toMatchObject({ state: 'closed', consecutiveFailures: 0, windowAttempts: 0, lastFailureAt: null });
    });

    it("while open every admit is refused with reason 'open' and retryAtMs = openUntil, taking no slot", async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'open-now';
      await failTimes(g1, key, 3);
      const openUntil = (await g1.snapshot(key))?.openUntil?.getTime();
      expect(openUntil).toBeDefined();
      for (const gate of [g1, g2, g1]) {
        expect(await admitOn(gate, key, token(), { cap: 1, rate: 1 })).toEqual({ admitted: false, reason: 'open', inFlight: 0, retryAtMs: openUntil });
      }
      expect((await g2.snapshot(key))?.inFlight).toBe(0);
    });

    it('after the cooldown exactly one admit is the half-open probe; the others see open (probing); a probe success closes it', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'https://recovering.example.com/hook';
      await failTimes(g1, key, 3);
      const openUntil = (await g2.snapshot(key))?.openUntil?.getTime() ?? 0;
      await waitUntilMs(openUntil);

      const tokens = Array.from({ length: 6 }, () => token('p'));
      const before = await redisNow();
      const admissions = await Promise.all(tokens.map((t, i) => admitOn(i % 2 === 0 ? g1 : g2, key, t)));
      const probes = admissions.flatMap((a, i) => (a.admitted ? [{ a, t: tokens[i] as string }] : []));
      expect(probes).toHaveLength(1);
      expect(probes[0]?.a).toEqual({ admitted: true, inFlight: 1, transition: 'half_open' });
      const refused = admissions.filter((a) => !a.admitted);
      expect(refused).toHaveLength(5);
      for (const r of refused) {
        expect(r).toMatchObject({ admitted: false, reason: 'probing', inFlight: 0 });
        // Probing: retry once the probe's lease would lapse.
        if (!r.admitted) expect((r.retryAtMs ?? 0) - before).toBeGreaterThanOrEqual(LONG_LEASE_MS - 50);
      }
      expect(await g1.snapshot(key)).toMatchObject({ state: 'half_open', openUntil: null, inFlight: 1 });

      const probe = probes[0]?.t as string;
      expect(await g1.release(key, probe, 'ok')).toEqual({ transition: 'closed', autoDisable: false });
      const snap = await g2.snapshot(key);
      expect(snap).toMatchObject({ state: 'closed', consecutiveFailures: 0, openUntil: null, failingSince: null, inFlight: 0 });
      expect(snap?.lastSuccessAt).toBeInstanceOf(Date);
      // Admits work again, with no further transition.
      const again = await Promise.all([admitOn(g1, key, token()), admitOn(g2, key, token()), admitOn(g1, key, token())]);
      expect(again).toEqual([
        { admitted: true, inFlight: expect.any(Number) },
        { admitted: true, inFlight: expect.any(Number) },
        { admitted: true, inFlight: expect.any(Number) },
      ]);
    });

    it('failed probes reopen it with the cooldown doubled up to maxCooldownMs; a successful probe resets the cooldown', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'still-down';
      const openFor = async () => {
        const snap = await g1.snapshot(key);
        expect(snap?.state).toBe('open');
        // openUntil and lastFailureAt are written by the same script call, from the same TIME.
        return (snap?.openUntil?.getTime() ?? 0) - (snap?.lastFailureAt?.getTime() ?? 0);
      };
      const probeOnce = async (gate: EndpointGate) => {
        await waitUntilMs((await gate.snapshot(key))?.openUntil?.getTime() ?? 0);
        const t = token('probe');
        expect(await admitOn(gate, key, t)).toEqual({ admitted: true, inFlight: 1, transition: 'half_open' });
        return t;
      };

      await failTimes(g1, key, 3);
      expect(await openFor()).toBe(300);

      let probe = await probeOnce(g2);
      expect(await g1.release(key, probe, 'fail')).toEqual({ transition: 'open', autoDisable: false });
      expect(await openFor()).toBe(600);

      probe = await probeOnce(g1);
      expect(await g2.release(key, probe, 'fail')).toEqual({ transition: 'open', autoDisable: false });
      expect(await openFor()).toBe(1_000); // 1200, capped

      probe = await probeOnce(g2);
      expect(await g2.release(key, probe, 'ok')).toEqual({ transition: 'closed', autoDisable: false });
      expect(await failTimes(g1, key, 3)).toEqual([undefined, undefined, 'open']);
      expect(await openFor()).toBe(300);
    });

    it('a late failure from an attempt admitted before the breaker opened neither reopens nor counts', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'late';
      const straggler = token('late');
      await admitOn(g1, key, straggler);
      await failTimes(g2, key, 3);
      const openSnap = await g1.snapshot(key);
      // While open: no transition, no extra count, openUntil unchanged.
      expect(await g2.release(key, straggler, 'fail')).toEqual({ autoDisable: false });
      expect(await g1.snapshot(key)).toMatchObject({ state: 'open', consecutiveFailures: 3, openUntil: openSnap?.openUntil });

      // While half-open: only the probe's outcome moves the breaker.
      const stragglerTwo = token('late');
      await admitOn(g1, 'late-2', stragglerTwo);
      await failTimes(g1, 'late-2', 3);
      await waitUntilMs((await g1.snapshot('late-2'))?.openUntil?.getTime() ?? 0);
      const probe = token('probe');
      expect(await admitOn(g2, 'late-2', probe)).toMatchObject({ admitted: true, transition: 'half_open' });
      expect(await g1.release('late-2', stragglerTwo, 'fail')).toEqual({ autoDisable: false });
      expect(await g1.snapshot('late-2')).toMatchObject({ state: 'half_open' });
      expect(await g2.release('late-2', probe, 'ok')).toEqual({ transition: 'closed', autoDisable: false });
    });

    it('a probe whose worker died (lease lapsed) is replaced by a new probe, with no second half_open transition', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'lost-probe';
      await failTimes(g1, key, 3);
      await waitUntilMs((await g1.snapshot(key))?.openUntil?.getTime() ?? 0);
      expect(await admitOn(g1, key, token('dead-probe'), { leaseMs: 150 })).toMatchObject({ admitted: true, transition: 'half_open' });
      const refused = await admitOn(g2, key, token());
      expect(refused).toMatchObject({ admitted: false, reason: 'probing' });
      if (!refused.admitted) await waitUntilMs(refused.retryAtMs ?? 0);
      const t = token('new-probe');
      expect(await admitOn(g2, key, t)).toEqual({ admitted: true, inFlight: 1 });
      expect(await admitOn(g1, key, token())).toMatchObject({ admitted: false, reason: 'probing' });
      expect(await g2.release(key, t, 'ok')).toEqual({ transition: 'closed', autoDisable: false });
    });

    it('a probe released with a neutral outcome (cancelled, local error) frees the probe at once: the next admit probes', async () => {
      const [g1, g2] = twoGates(BREAKER);
      const key = 'neutral-probe';
      await failTimes(g1, key, 3);
      await waitUntilMs((await g1.snapshot(key))?.openUntil?.getTime() ?? 0);
      const first = token('cancelled-probe');
      expect(await admitOn(g1, key, first, { leaseMs: LONG_LEASE_MS })).toMatchObject({ admitted: true, transition: 'half_open' });
      expect(await admitOn(g2, key, token())).toMatchObject({ admitted: false, reason: 'probing' });
      expect(await g1.release(key, first, 'none')).toEqual({ autoDisable: false });
      // Not until the 30 s lease lapses: right away, and without a second half_open transition.
      const next = token('next-probe');
      expect(await admitOn(g2, key, next)).toEqual({ admitted: true, inFlight: 1 });
      expect(await g2.release(key, next, 'ok')).toEqual({ transition: 'closed', autoDisable: false });
    });

    it('a failure ratio over the window opens it once minRequests attempts are in', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 100, failureRatio: 0.5, minRequests: 4, windowMs: 60_000, cooldownMs: 300, autoDisableMs: 0 });
      const key = 'ratio';
      const outcome = async (gate: EndpointGate, o: 'ok' | 'fail') => {
        const t = token();
        await admitOn(gate, key, t);
        return (await gate.release(key, t, o)).transition;
      };
      expect(await outcome(g1, 'fail')).toBeUndefined();
      expect(await outcome(g2, 'ok')).toBeUndefined();
      // 2 of 3 failed, but fewer than minRequests: still closed.
      expect(await outcome(g1, 'fail')).toBeUndefined();
      expect(await g1.snapshot(key)).toMatchObject({ state: 'closed', consecutiveFailures: 1, windowAttempts: 3, windowFailures: 2 });
      // 3 of 4 ≥ 0.5: open, with only 2 consecutive failures (far below the threshold of 100).
      expect(await outcome(g2, 'fail')).toBe('open');
      expect(await g2.snapshot(key)).toMatchObject({ state: 'open', consecutiveFailures: 2, windowAttempts: 0, windowFailures: 0 });
    });

    it('below the ratio it stays closed, and the window restarts after windowMs', async () => {
      const [g1] = twoGates({ failureThreshold: 100, failureRatio: 0.5, minRequests: 4, windowMs: 200, cooldownMs: 300, autoDisableMs: 0 });
      const key = 'window';
      const outcome = async (o: 'ok' | 'fail') => {
        const t = token();
        await admitOn(g1, key, t);
        return (await g1.release(key, t, o)).transition;
      };
      for (const o of ['ok', 'ok', 'fail', 'ok', 'ok', 'fail'] as const) expect(await outcome(o)).toBeUndefined();
      expect(await g1.snapshot(key)).toMatchObject({ state: 'closed', windowAttempts: 6, windowFailures: 2 });
      await sleep(260);
      // A new window: 3 failures of 3 but below minRequests...
      for (let i = 0; i < 3; i++) expect(await outcome('fail')).toBeUndefined();
      expect(await g1.snapshot(key)).toMatchObject({ state: 'closed', windowAttempts: 3, windowFailures: 3 });
      // ...and the fourth reaches it.
      expect(await outcome('fail')).toBe('open');
    });
  });

  describe('auto-disable flag', () => {
    it('is returned once autoDisableMs has passed since failingSince with no success', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 100, minRequests: 1_000, autoDisableMs: 200 });
      const key = 'https://gone.example.com/hook';
      const fail = async (gate: EndpointGate) => {
        const t = token();
        await admitOn(gate, key, t);
        return gate.release(key, t, 'fail');
      };
      expect(await fail(g1)).toEqual({ autoDisable: false });
      const failingSince = (await g1.snapshot(key))?.failingSince?.getTime() ?? 0;
      expect(failingSince).toBeGreaterThan(0);
      expect(await fail(g2)).toEqual({ autoDisable: false });
      // failingSince is the first failure's time: later failures do not move it.
      expect((await g2.snapshot(key))?.failingSince?.getTime()).toBe(failingSince);
      await waitUntilMs(failingSince + 200);
      expect(await fail(g2)).toEqual({ autoDisable: true });
      expect(await fail(g1)).toEqual({ autoDisable: true });

      // A success clears failingSince: the clock starts over.
      const t = token();
      await admitOn(g1, key, t);
      expect(await g1.release(key, t, 'ok')).toEqual({ autoDisable: false });
      expect((await g1.snapshot(key))?.failingSince).toBeNull();
      expect(await fail(g2)).toEqual({ autoDisable: false });
    });

    it('is reported with the open transition when both happen in one release, and never with autoDisableMs 0', async () => {
      const [g1] = twoGates({ failureThreshold: 2, minRequests: 1_000, cooldownMs: 300, autoDisableMs: 150 });
      const key = 'both-at-once';
      const t1 = token();
      await admitOn(g1, key, t1);
      expect(await g1.release(key, t1, 'fail')).toEqual({ autoDisable: false });
      await waitUntilMs(((await g1.snapshot(key))?.failingSince?.getTime() ?? 0) + 150);
      const t2 = token();
      await admitOn(g1, key, t2);
      expect(await g1.release(key, t2, 'fail')).toEqual({ transition: 'open', autoDisable: true });

      const [never] = twoGates({ failureThreshold: 100, minRequests: 1_000, autoDisableMs: 0 });
      const t3 = token();
      await admitOn(never, 'never', t3);
      await never.release('never', t3, 'fail');
      await sleep(50);
      const t4 = token();
      await admitOn(never, 'never', t4);
      expect(await never.release('never', t4, 'fail')).toEqual({ autoDisable: false });
    });
  });

  describe('reset, snapshot and list', () => {
    it('reset() closes an open breaker and clears its counters; slots held stay held', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 2, minRequests: 1_000, cooldownMs: 60_000, autoDisableMs: 0 });
      const key = 'operator-enabled';
      const holder = token('held');
      expect(await admitOn(g1, key, holder, { cap: 2 })).toMatchObject({ admitted: true });
      await failTimes(g1, key, 2);
      expect(await admitOn(g2, key, token(), { cap: 2 })).toMatchObject({ admitted: false, reason: 'open' });
      const lastFailureAt = (await g1.snapshot(key))?.lastFailureAt;

      await g2.reset(key);
      const snap = await g1.snapshot(key);
      expect(snap).toMatchObject({
        state: 'closed',
        consecutiveFailures: 0,
        windowAttempts: 0,
        windowFailures: 0,
        openUntil: null,
        probeUntil: null,
        failingSince: null,
        inFlight: 1,
        lastFailureAt,
      });
      expect(await admitOn(g1, key, token(), { cap: 2 })).toEqual({ admitted: true, inFlight: 2 });
      expect(await admitOn(g2, key, token(), { cap: 2 })).toMatchObject({ admitted: false, reason: 'busy' });
      // The counters really start over: one failure does not reopen it (the threshold is 2).
      await g1.release(key, holder, 'none');
      const t = token();
      await admitOn(g1, key, t, { cap: 2 });
      expect(await g1.release(key, t, 'fail')).toEqual({ autoDisable: false });
      expect((await g2.snapshot(key))?.state).toBe('closed');
    });

    it('reset() of an unknown endpoint is harmless and creates nothing visible', async () => {
      const [g1] = twoGates();
      await g1.reset('never-seen');
      expect(await g1.snapshot('never-seen')).toBeUndefined();
      expect(await g1.list()).toEqual([]);
    });

    it('slow start: a new endpoint gets 4 slots of its cap of 16; +1 per success, halved per failure, never above the cap or below 1', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 1_000, minRequests: 1_000 });
      const key = 'slow-start';
      const fill = async () => {
        const held: string[] = [];
        for (;;) {
          const t = token();
          const a = await admitOn(held.length % 2 === 0 ? g1 : g2, key, t, { cap: 16 });
          if (!a.admitted) {
            expect(a.reason).toBe('busy');
            return held;
          }
          held.push(t);
          if (held.length > 16) throw new Error('cap exceeded');
        }
      };
      const releaseAll = (held: string[], outcome: 'ok' | 'fail' | 'none') => Promise.all(held.map((t) => g1.release(key, t, outcome)));
      let held = await fill();
      expect(held).toHaveLength(4);
      await releaseAll(held, 'ok'); // 4 successes: 8
      held = await fill();
      expect(held).toHaveLength(8);
      await releaseAll(held, 'ok'); // 16 (the cap), not 16+
      held = await fill();
      expect(held).toHaveLength(16);
      expect((await g2.snapshot(key))?.earnedLimit).toBe(16);
      await releaseAll(held.slice(0, 1), 'fail'); // one failure halves it: 8
      await releaseAll(held.slice(1), 'none'); // neutral outcomes change nothing
      expect((await g2.snapshot(key))?.earnedLimit).toBe(8);
      held = await fill();
      expect(held).toHaveLength(8);
      await releaseAll(held, 'fail'); // 8 failures: down to 1, not 0
      expect((await g2.snapshot(key))?.earnedLimit).toBe(1);
      expect(await fill()).toHaveLength(1);
    });

    it('snapshot() of an endpoint never admitted is undefined; a fresh one is closed with counters at zero', async () => {
      const [g1, g2] = twoGates();
      expect(await g1.snapshot('nobody')).toBeUndefined();
      const before = await redisNow();
      await admitOn(g1, 'fresh', token());
      const snap = await g2.snapshot('fresh');
      expect(snap).toEqual({
        key: 'fresh',
        state: 'closed',
        inFlight: 1,
        earnedLimit: null,
        consecutiveFailures: 0,
        windowAttempts: 0,
        windowFailures: 0,
        openUntil: null,
        probeUntil: null,
        lastSuccessAt: null,
        lastFailureAt: null,
        failingSince: null,
        lastSeenAt: expect.any(Date),
      });
      expect(snap?.lastSeenAt?.getTime()).toBeGreaterThanOrEqual(before);
      expect(snap?.lastSeenAt?.getTime()).toBeLessThanOrEqual((await redisNow()) + 1);
    });

    it('snapshot() reports successes, failures and window counts', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 100, minRequests: 1_000, autoDisableMs: 0 });
      const key = 'counted';
      const run = async (gate: EndpointGate, o: 'ok' | 'fail') => {
        const t = token();
        await admitOn(gate, key, t);
        await gate.release(key, t, o);
      };
      await run(g1, 'ok');
      const okSnap = await g2.snapshot(key);
      expect(okSnap).toMatchObject({ consecutiveFailures: 0, windowAttempts: 1, windowFailures: 0, lastFailureAt: null, failingSince: null });
      expect(okSnap?.lastSuccessAt).toBeInstanceOf(Date);
      await run(g2, 'fail');
      await run(g1, 'fail');
      const snap = await g1.snapshot(key);
      expect(snap).toMatchObject({
        state: 'closed',
        inFlight: 0,
        consecutiveFailures: 2,
        windowAttempts: 3,
        windowFailures: 2,
        lastSuccessAt: okSnap?.lastSuccessAt,
      });
      expect(snap?.lastFailureAt?.getTime()).toBeGreaterThanOrEqual(okSnap?.lastSuccessAt?.getTime() ?? 0);
      expect(snap?.failingSince?.getTime()).toBeLessThanOrEqual(snap?.lastFailureAt?.getTime() ?? 0);
    });

    it('list() returns every endpoint, most recently used first, bounded by limit, with each one’s values', async () => {
      const [g1, g2] = twoGates({ failureThreshold: 1, minRequests: 1_000, cooldownMs: 60_000, autoDisableMs: 0 });
      const odd = `key with spaces/é/${'x'.repeat(180)}`;
      await admitOn(g1, 'first', token());
      await sleep(5);
      await failTimes(g2, 'second', 1);
      await sleep(5);
      await admitOn(g2, odd, token());
      await admitOn(g1, odd, token());

      const all = await g1.list();
      expect(all.map((s) => s.key)).toEqual([odd, 'second', 'first']);
      expect(all.map((s) => [s.state, s.inFlight])).toEqual([
        ['closed', 2],
        ['open', 0],
        ['closed', 1],
      ]);
      expect(all[1]).toMatchObject({ consecutiveFailures: 1, openUntil: expect.any(Date), lastFailureAt: expect.any(Date) });
      expect(await g2.list()).toEqual(all);
      expect((await g2.list(2)).map((s) => s.key)).toEqual([odd, 'second']);
      expect((await g2.list(1)).map((s) => s.key)).toEqual([odd]);
      // Another prefix (another queue) sees none of them.
      const otherPrefix = `test-ep-${randomUUID()}`;
      expect(await createEndpointGate(r1, { keyPrefix: otherPrefix }).list()).toEqual([]);
      expect(await createEndpointGate(r1, { keyPrefix: otherPrefix }).snapshot('first')).toBeUndefined();
    });

    it('state lives under the prefix with hashed keys and an expiry; the defaults are the documented ones', async () => {
      const [g1] = twoGates();
      const key = 'https://secret.example.com/path';
      await admitOn(g1, key, token());
      const keys = await listKeys(`${prefix}:*`, r1);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.sort()).toEqual(expect.arrayContaining([`${prefix}:ep-index`]));
      expect(keys).toHaveLength(3);
      for (const k of keys) {
        expect(k.startsWith(`${prefix}:ep`)).toBe(true);
        expect(k).not.toContain('secret.example.com');
        // The per-endpoint state and slot keys expire when idle (the index is pruned by list()).
        if (k !== `${prefix}:ep-index`) expect(await r1.pttl(k)).toBeGreaterThan(0);
      }
      expect(g1.policy).toEqual(DEFAULT_BREAKER_POLICY);
      expect(createEndpointGate(r2, { keyPrefix: prefix, policy: { cooldownMs: 5 } }).policy).toEqual({ ...DEFAULT_BREAKER_POLICY, cooldownMs: 5 });
    });
  });
});
