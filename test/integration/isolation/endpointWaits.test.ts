/**
 * Issue 27: the adaptive limit in the Redis gate matches the pure function, and a job whose
 * endpoint is at its limit waits in the worker's memory (admission.ts) — on the real Redis gate
 * and a real migrated Postgres (the endpoint policies).
 */
import { describe, expect, it } from 'vitest';
import { type LimitOutcome, limitCeiling, nextLimit } from '../../../src/isolation/adaptiveLimit.ts';
import { createEndpointGate, DEFAULT_BREAKER_POLICY } from '../../../src/isolation/endpointGate.ts';
import { createEndpointIsolation, type EndpointIsolation } from '../../../src/isolation/endpointIsolation.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { type AdmissionResult, createAdmission, MIN_ENDPOINT_QUEUE } from '../../../src/worker/attempt/admission.ts';
import { waitFor } from '../queue/harness.ts';
import { useIsolationStack } from './isolationStack.ts';

const LEASE_MS = 30_000;
const BUDGET_MS = 60_000;

describe('endpoint waits and the adaptive limit (issue 27)', () => {
  let seq = 0;
  const token = () => `w-${++seq}`;

  const stack = useIsolationStack('ep_waits', 'test-epw');

  const isolation = async (defaultCap: number): Promise<EndpointIsolation> => {
    const gate = createEndpointGate(stack.redis, { keyPrefix: stack.prefix, policy: { failureThreshold: 1_000, minRequests: 1_000 } });
    const iso = createEndpointIsolation({ gate, db: stack.db, defaultCap, logger: silentLogger(), random: () => 1, refreshMs: 60_000 });
    await stack.start(iso);
    return iso;
  };
  const request = (endpoint: string, extra: { deadlineAtMs?: number } = {}) => ({
    endpoint,
    token: token(),
    leaseMs: LEASE_MS,
    hookRate: undefined,
    starts: 1,
    deadlineAtMs: extra.deadlineAtMs,
    budgetMs: BUDGET_MS,
  });
  /** Settles as the processor does: the worker's slot (done), then the endpoint's release. */
  const finish = async (iso: EndpointIsolation, endpoint: string, tok: string, go: AdmissionResult, outcome: 'ok' | 'fail' = 'ok') => {
    if (go.kind !== 'go') throw new Error(`expected go, got ${go.kind}`);
    const result =
      outcome === 'ok'
        ? ({ ok: true, transport: 'fetch', httpStatus: 200, fellBack: false, durationMs: 2 } as const)
        : ({
            ok: false,
            errorClass: 'http_error',
            httpStatus: 503,
            permanent: false,
            critical: false,
            transport: 'fetch',
            fellBack: false,
            durationMs: 2,
          } as const);
    go.done(result.durationMs);
    await iso.settle(endpoint, tok, result, 10_000);
  };

  it('adaptive limit: the gate in Redis follows nextLimit over the same outcomes (fast, slow, failure, local), within a configured cap', async () => {
    for (const cap of [0, 12]) {
      const gate = createEndpointGate(stack.redis, { keyPrefix: stack.prefix, policy: { failureThreshold: 1_000, minRequests: 1_000 } });
      const key = `mirror-${cap}`;
      const outcomes: LimitOutcome[] = [
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'ok',
        'slow',
        'fail',
        'ok',
        'none',
        'slow',
        'slow',
        'fail',
        'fail',
        'fail',
        'ok',
      ];
      let expected: number | undefined;
      for (const outcome of outcomes) {
        const t = token();
        const admitted = await gate.admit({ key, token: t, leaseMs: LEASE_MS, cap: limitCeiling(cap), rate: 0 });
        expect(admitted.admitted).toBe(true);
        await gate.release(key, t, outcome);
        expected = nextLimit(expected, outcome, { initial: DEFAULT_BREAKER_POLICY.initialLimit, cap });
        const earned = (await gate.snapshot(key))?.earnedLimit ?? DEFAULT_BREAKER_POLICY.initialLimit;
        expect({ outcome, limit: earned }).toEqual({ outcome, limit: expected });
      }
    }
  });

  it('adaptive limit: with no configured cap a fast endpoint grows past the old fixed cap (16) and a worker fills its 64 slots', async () => {
    const iso = await isolation(0);
    const admission = createAdmission({ concurrency: 64, waitAllowance: 64, isolation: iso });
    const key = 'fast';
    /** The admission's answer, or undefined once the job waits in memory instead. */
    const answerOrWait = async (pending: Promise<AdmissionResult>): Promise<AdmissionResult | undefined> => {
      let answer: AdmissionResult | undefined;
      void pending.then((a) => (answer = a));
      for (let i = 0; i < 2_000; i += 1) {
        if (answer) return answer;
        if (admission.waiting() > 0) return undefined;
        await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error('neither admitted nor waiting');
    };
    let held: { t: string; go: AdmissionResult }[] = [];
    let peak = 0;
    // Rounds: admit until the endpoint says wait (or 64 at once), then finish them all (fast successes).
    for (let round = 0; round < 12 && peak < 64; round += 1) {
      let waiter: { t: string; pending: Promise<AdmissionResult> } | undefined;
      while (held.length < 64) {
        const r = request(key);
        const pending = Promise.resolve(admission.admit(r));
        const answer = await answerOrWait(pending);
        if (answer === undefined) {
          waiter = { t: r.token, pending };
          break;
        }
        expect(answer.kind).toBe('go');
        held.push({ t: r.token, go: answer });
      }
      peak = Math.max(peak, held.length);
      await Promise.all(held.map(({ t, go }) => finish(iso, key, t, go)));
      held = waiter ? [{ t: waiter.t, go: await waiter.pending }] : [];
    }
    expect(peak).toBe(64);
    await Promise.all(held.map(({ t, go }) => finish(iso, key, t, go)));
    admission.close();
  });

  it('a job whose endpoint is at its limit waits in memory (no deferral) and starts when an attempt of that endpoint ends', async () => {
    const iso = await isolation(1);
    const admission = createAdmission({ concurrency: 8, waitAllowance: 8, isolation: iso });
    const first = request('one-slot');
    const go = await admission.admit(first);
    expect(go.kind).toBe('go');
    const second = request('one-slot');
    let answer: AdmissionResult | undefined;
    const waiting = Promise.resolve(admission.admit(second)).then((a) => (answer = a));
    await waitFor(() => admission.waiting() === 1, 5_000, 'the second job waits in memory');
    expect(answer).toBeUndefined();
    await finish(iso, 'one-slot', first.token, go);
    await waiting;
    expect(answer?.kind).toBe('go');
    // Its wait started the generation's clock in memory (Q3): the attempt's outcome stores it.
    if (answer?.kind === 'go') expect(answer.deadlineAtMs).toBeGreaterThan(Date.now());
    admission.close();
  });

  it('Q3: a job still waiting in memory at its deadline is expired with reason busy (endpoint_busy), never attempted', async () => {
    const iso = await isolation(1);
    const admission = createAdmission({ concurrency: 8, waitAllowance: 8, isolation: iso });
    const go = await admission.admit(request('stuck'));
    expect(go.kind).toBe('go');
    const answer = await admission.admit(request('stuck', { deadlineAtMs: Date.now() + 300 }));
    expect(answer).toMatchObject({ kind: 'expired', reason: 'busy' });
    expect(admission.waiting()).toBe(0);
    admission.close();
  });

  it('bounded: past MIN_ENDPOINT_QUEUE waiters for an endpoint with one slot, the next job is deferred (moved to delayed), not queued', async () => {
    const iso = await isolation(1);
    const admission = createAdmission({ concurrency: 16, waitAllowance: 16, isolation: iso });
    const go = await admission.admit(request('bounded'));
    expect(go.kind).toBe('go');
    const waiters = Array.from({ length: MIN_ENDPOINT_QUEUE }, () => admission.admit(request('bounded')));
    await waitFor(() => admission.waiting() === MIN_ENDPOINT_QUEUE, 5_000, 'a full queue');
    const extra = await admission.admit(request('bounded'));
    expect(extra).toMatchObject({ kind: 'defer', reason: 'busy' });
    if (extra.kind === 'defer') expect(extra.atMs).toBeGreaterThan(Date.now());
    // Another endpoint is not held up by the full one.
    expect((await admission.admit(request('other'))).kind).toBe('go');
    // Stopping gives every waiter back (requeue), none attempted.
    admission.close();
    expect((await Promise.all(waiters)).map((a) => a.kind)).toEqual(Array(MIN_ENDPOINT_QUEUE).fill('requeue'));
  });

  it('the worker limit: with every delivery slot taken the next job waits for one, then starts', async () => {
    const iso = await isolation(0);
    const admission = createAdmission({ concurrency: 2, waitAllowance: 2, isolation: iso });
    const a = request('e1');
    const b = request('e2');
    const goA = await admission.admit(a);
    const goB = await admission.admit(b);
    let third: AdmissionResult | undefined;
    const pending = Promise.resolve(admission.admit(request('e3'))).then((r) => (third = r));
    await new Promise((r) => setTimeout(r, 50));
    expect(third).toBeUndefined();
    await finish(iso, 'e1', a.token, goA);
    await pending;
    expect(third?.kind).toBe('go');
    await finish(iso, 'e2', b.token, goB);
    admission.close();
  });
});
