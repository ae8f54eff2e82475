/**
 * Issue 38: slot leases (endpointLeases.ts) on the real Redis gate and a real migrated Postgres —
 * a healthy endpoint's admits are taken locally (no gate call, synchronous), the cap holds across
 * workers, a failure reaches the breaker at once, and a dead worker's lease lapses by itself.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { type BreakerPolicy, createEndpointGate, type EndpointGate, type ReleaseOutcome } from '../../../src/isolation/endpointGate.ts';
import { type AdmitDecision, createEndpointIsolation, type EndpointIsolation } from '../../../src/isolation/endpointIsolation.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { setEndpointLimits } from '../../../src/store/endpointsRepo.ts';
import { createAdmission } from '../../../src/worker/attempt/admission.ts';
import { TEST_REDIS_URL, waitFor } from '../queue/harness.ts';
import { notificationFailure, notificationSuccess, useIsolationStack } from './isolationStack.ts';

const LEASE_MS = 30_000;
const success = notificationSuccess;
const failure = notificationFailure('http_error');

describe('slot leases (issue 38)', () => {
  let seq = 0;
  const token = () => `l-${++seq}`;

  const stack = useIsolationStack('ep_leases', 'test-epl');

  /** A gate that counts its script calls. */
  const countingGate = (connection: Redis, policy: Partial<BreakerPolicy> = {}): { gate: EndpointGate; calls: () => number } => {
    const inner = createEndpointGate(connection, { keyPrefix: stack.prefix, policy });
    let calls = 0;
    const gate: EndpointGate = {
      ...inner,
      exchange(...args) {
        calls += 1;
        return inner.exchange(...args);
      },
    };
    return { gate, calls: () => calls };
  };
  const isolation = async (gate: EndpointGate, defaultCap = 0): Promise<EndpointIsolation> => {
    const iso = createEndpointIsolation({ gate, db: stack.db, defaultCap, logger: silentLogger(), random: () => 1, refreshMs: 60_000 });
    await stack.start(iso);
    return iso;
  };
  const admit = (iso: EndpointIsolation, key: string, t = token(), leaseMs = LEASE_MS) => iso.admit({ key, token: t, leaseMs, hookRate: undefined, starts: 1 });

  it('PERF-lease: on a healthy endpoint most admits are synchronous and need no gate call; outcomes reach the adaptive limit in blocks', async () => {
    const { gate, calls } = countingGate(stack.redis);
    const iso = await isolation(gate);
    const key = 'https://fast.example.com/hook';
    let synchronous = 0;
    // 50 rounds of 16 attempts at once, each finished with a fast success.
    for (let round = 0; round < 50; round += 1) {
      const tokens = Array.from({ length: 16 }, () => token());
      const decisions = tokens.map((t) => admit(iso, key, t));
      synchronous += decisions.filter((d) => !(d instanceof Promise)).length;
      const answers: AdmitDecision[] = await Promise.all(decisions);
      const admitted = tokens.filter((_, i) => answers[i]!.kind === 'go');
      await Promise.all(admitted.map((t) => iso.settle(key, t, success, 10_000)));
    }
    // The limit starts at 4: the first rounds grow it (calls), then the lease covers every round.
    expect(synchronous).toBeGreaterThan(650);
    expect(calls()).toBeLessThan(40);
    // The outcomes were reported in blocks: the adaptive limit grew past a round's 16.
    await waitFor(async () => ((await gate.snapshot(key))?.earnedLimit ?? 0) >= 100, 2_000, 'the outcomes to be reported');
    expect(await gate.snapshot(key)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
  });

  it('PERF-lease: outcomes reported in runs move the breaker and the adaptive limit exactly as single releases do', async () => {
    const gate = createEndpointGate(stack.redis, { keyPrefix: stack.prefix, policy: { failureThreshold: 4, minRequests: 1_000, autoDisableMs: 0 } });
    const outcomes: [ReleaseOutcome, number][] = [
      ['ok', 5],
      ['slow', 1],
      ['fail', 2],
      ['ok', 3],
      ['none', 1],
      ['fail', 4],
      ['ok', 2],
    ];
    const cap = 12;
    // One endpoint through per-attempt admits and releases, one at a time.
    for (const [outcome, count] of outcomes)
      for (let i = 0; i < count; i += 1) {
        const t = token();
        await gate.admit({ key: 'single', token: t, leaseMs: LEASE_MS, cap, rate: 0 });
        await gate.release('single', t, outcome);
      }
    // The other through a lease, its outcomes in one call.
    await gate.exchange('runs', [], [], { id: 'L:test', held: 0, want: 4, keep: 0, durationMs: LEASE_MS, renew: false, cap, outcomes: [] });
    await gate.exchange('runs', [], [], { id: 'L:test', held: 4, want: 0, keep: 0, durationMs: LEASE_MS, renew: false, cap, outcomes });
    const pick = (s: Awaited<ReturnType<EndpointGate['snapshot']>>) => ({
      state: s?.state,
      earnedLimit: s?.earnedLimit,
      consecutiveFailures: s?.consecutiveFailures,
      windowAttempts: s?.windowAttempts,
      windowFailures: s?.windowFailures,
      inFlight: s?.inFlight,
    });
    const single = pick(await gate.snapshot('single'));
    expect(single.state).toBe('open');
    expect(pick(await gate.snapshot('runs'))).toEqual(single);
  });

  it('PERF-lease: the admission fast path is synchronous when a leased slot is free, and the worker slot frees with done()', async () => {
    const { gate } = countingGate(stack.redis);
    const iso = await isolation(gate);
    const admission = createAdmission({ concurrency: 8, waitAllowance: 8, isolation: iso });
    const request = () => ({ endpoint: 'sync', token: token(), leaseMs: LEASE_MS, hookRate: undefined, starts: 1, deadlineAtMs: undefined, budgetMs: 60_000 });
    const first = request();
    const go = await admission.admit(first);
    expect(go.kind).toBe('go');
    if (go.kind === 'go') go.done(1);
    await iso.settle('sync', first.token, success, 10_000);
    const second = request();
    const now = admission.admit(second);
    expect(now).not.toBeInstanceOf(Promise);
    expect(now).toMatchObject({ kind: 'go', deadlineAtMs: undefined });
    if (!(now instanceof Promise) && now.kind === 'go') now.done(1);
    await iso.settle('sync', second.token, success, 10_000);
    admission.close();
  });

  it('PERF-lease: a cap holds across two workers leasing the same endpoint, and a short limit is shared between them', async () => {
    const { gate } = countingGate(stack.redis);
    await setEndpointLimits(stack.db, 'capped', { concurrency: 6 });
    const a = await isolation(gate);
    const b = await isolation(gate);
    // Grow the limit to the cap first (fast successes).
    for (let i = 0; i < 10; i += 1) {
      const t = token();
      expect((await admit(a, 'capped', t)).kind).toBe('go');
      await a.settle('capped', t, success, 10_000);
    }
    const take = async (iso: EndpointIsolation, n: number): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < n; i += 1) {
        const t = token();
        if ((await admit(iso, 'capped', t)).kind === 'go') out.push(t);
      }
      return out;
    };
    const heldA = await take(a, 10);
    const heldB = await take(b, 10);
    expect(heldA.length).toBe(6);
    expect(heldB.length).toBe(0);
    expect((await gate.snapshot('capped'))?.inFlight).toBeLessThanOrEqual(6);
    // B asks again while A finishes its attempts: A's lease shrinks to its share and B gets slots.
    for (const t of heldA) await a.settle('capped', t, success, 10_000);
    let heldB2: string[] = [];
    await waitFor(
      async () => {
        heldB2 = heldB2.concat(await take(b, 3));
        return heldB.length + heldB2.length >= 3;
      },
      3_000,
      'worker B to get its share',
    );
    const heldA2 = await take(a, 10);
    expect(heldA2.length + heldB.length + heldB2.length).toBeLessThanOrEqual(6);
  });

  it('PERF-lease: a failure on a leased slot reaches the breaker before settle returns, and opens it for the other worker too', async () => {
    const { gate } = countingGate(stack.redis, { failureThreshold: 2, minRequests: 1_000, cooldownMs: 60_000, autoDisableMs: 0 });
    const a = await isolation(gate);
    const b = await isolation(gate);
    const key = 'breaks';
    // Both workers hold a lease on the endpoint (a success each; B's comes once A's idle lease shrank to its share).
    for (const iso of [a, b])
      await waitFor(
        async () => {
          const t = token();
          if ((await admit(iso, key, t)).kind !== 'go') return false;
          await iso.settle(key, t, success, 10_000);
          return true;
        },
        2_000,
        'a leased slot',
      );
    // Successes are reported in blocks (within 100 ms): both are in before the failures start.
    await waitFor(async () => (await gate.snapshot(key))?.windowAttempts === 2, 2_000, 'the successes to be reported');
    for (let i = 0; i < 2; i += 1) {
      const t = token();
      expect((await admit(a, key, t)).kind).toBe('go');
      await a.settle(key, t, failure, 10_000);
      // settle() returned: the gate has the failure already.
      expect((await gate.snapshot(key))?.consecutiveFailures).toBe(i + 1);
    }
    expect((await gate.snapshot(key))?.state).toBe('open');
    // A's next admit is no longer local: the breaker's deferral.
    expect(await admit(a, key)).toMatchObject({ kind: 'defer', reason: 'open' });
    // B, whose own attempts succeeded, learns it at its next call (within 100 ms).
    await waitFor(async () => (await admit(b, key)).kind === 'defer', 2_000, 'worker B to see the open breaker');
  });

  it('PERF-lease: a worker that dies holding a lease frees its slots when the lease lapses', async () => {
    const dying = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    dying.on('error', () => undefined);
    await new Promise((resolve) => dying.once('ready', resolve));
    await setEndpointLimits(stack.db, 'lapses', { concurrency: 4 });
    const { gate: gateOfDying } = countingGate(dying);
    const dead = await isolation(gateOfDying);
    const shortLease = 300;
    const held: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const t = token();
      if ((await admit(dead, 'lapses', t, shortLease)).kind === 'go') held.push(t);
    }
    expect(held.length).toBe(4);
    dying.disconnect(); // the worker is gone: no renewal, no release
    const { gate } = countingGate(stack.redis);
    const live = await isolation(gate);
    expect(await admit(live, 'lapses', token(), shortLease)).toMatchObject({ kind: 'defer', reason: 'busy' });
    // The lease lasts one attempt lease + 2 s after its last renewal: then the slots are free again.
    await waitFor(async () => (await admit(live, 'lapses', token(), shortLease)).kind === 'go', 5_000, 'the dead lease to lapse');
  });
});
