/**
 * Endpoint isolation on the real Redis and a real migrated Postgres: the gate plus the durable
 * policies (disabled endpoints, per-endpoint limits), the deferral times, settle() feeding the
 * breaker and auto-disable, and the per-state counts behind the endpoint-state gauge.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Counter } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import type { NotificationResult } from '../../../src/notify/deliver.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { createDeliveryMetrics, type DeliveryMetrics } from '../../../src/observability/metrics.ts';
import { type BreakerPolicy, createEndpointGate, type EndpointGate } from '../../../src/isolation/endpointGate.ts';
import { type AdmitDecision, createEndpointIsolation, type EndpointIsolation } from '../../../src/isolation/endpointIsolation.ts';
import { disableEndpoint, enableEndpoint, getEndpointPolicy, setEndpointLimits } from '../../../src/store/endpointsRepo.ts';
import { waitFor } from '../queue/harness.ts';
import { notificationFailure, notificationSuccess, useIsolationStack } from './isolationStack.ts';

const REFRESH_MS = 50;
const LEASE_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

const success = notificationSuccess;
const failure = notificationFailure;

async function counterValue(counter: Counter<string>, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

describe('endpoint isolation (Redis gate + Postgres policies)', () => {
  let metrics: DeliveryMetrics;
  let seq = 0;
  const token = () => `tok-${++seq}`;

  const stack = useIsolationStack('ep_iso', 'test-ep');
  beforeEach(() => {
    metrics = createDeliveryMetrics({ processMetrics: false });
  });

  type MakeOptions = { defaultCap?: number; policy?: Partial<BreakerPolicy>; random?: () => number; gate?: EndpointGate; metrics?: DeliveryMetrics };
  const make = async (options: MakeOptions = {}): Promise<{ iso: EndpointIsolation; gate: EndpointGate }> => {
    const gate = options.gate ?? createEndpointGate(stack.redis, { keyPrefix: stack.prefix, policy: options.policy ?? {} });
    const iso = createEndpointIsolation({
      gate,
      db: stack.db,
      defaultCap: options.defaultCap ?? 0,
      logger: silentLogger(),
      metrics: options.metrics ?? metrics,
      random: options.random ?? (() => 1),
      refreshMs: REFRESH_MS,
    });
    await stack.start(iso);
    return { iso, gate };
  };
  const admit = async (iso: EndpointIsolation, key: string, extra: { hookRate?: number; starts?: number; t?: string } = {}): Promise<AdmitDecision> =>
    iso.admit({ key, token: extra.t ?? token(), leaseMs: LEASE_MS, hookRate: extra.hookRate, starts: extra.starts ?? 1 });
  const admitMany = async (iso: EndpointIsolation, key: string, n: number, extra: { hookRate?: number } = {}) => {
    const out: AdmitDecision[] = [];
    for (let i = 0; i < n; i++) out.push(await admit(iso, key, extra));
    return out;
  };
  const kinds = (decisions: AdmitDecision[]) => decisions.map((d) => (d.kind === 'defer' ? `defer:${d.reason}` : d.kind));
  /** Admits one attempt and settles it with `result`. */
  const attempt = async (iso: EndpointIsolation, key: string, result: NotificationResult | undefined) => {
    const t = token();
    expect(await admit(iso, key, { t })).toEqual({ kind: 'go' });
    await iso.settle(key, t, result);
  };

  describe('disabled endpoints are held', () => {
    it('an endpoint disabled in Postgres is held after the next refresh; others still go; enabling it lets it go again', async () => {
      const { iso, gate } = await make();
      const key = 'https://disabled.example.com/hook';
      expect(await admit(iso, key)).toEqual({ kind: 'go' });
      expect(await disableEndpoint(stack.db, key, 'operator', 'maintenance window')).toBe(true);
      await waitFor(async () => (await admit(iso, key)).kind === 'hold', 2_000, 'the disable to be read');

      // A held admit never reaches Redis: no slot taken, no deferral counted.
      const before = await gate.snapshot(key);
      for (let i = 0; i < 3; i++) expect(await admit(iso, key)).toEqual({ kind: 'hold' });
      expect(await gate.snapshot(key)).toEqual(before);
      expect(await counterValue(metrics.endpointDeferrals)).toBe(0);
      expect(await admit(iso, 'https://other.example.com/hook')).toEqual({ kind: 'go' });

      expect(await enableEndpoint(stack.db, key)).toBe(true);
      await waitFor(async () => (await admit(iso, key)).kind === 'go', 2_000, 'the enable to be read');
    });

    it('an endpoint already disabled when the isolation starts is held from the first admit', async () => {
      await disableEndpoint(stack.db, 'app:/api/hooks', 'operator', 'off');
      const { iso } = await make();
      expect(await admit(iso, 'app:/api/hooks')).toEqual({ kind: 'hold' });
      expect(await admit(iso, 'app:/api/other')).toEqual({ kind: 'go' });
    });

    it('a stopped isolation no longer refreshes its policies', async () => {
      const { iso } = await make();
      iso.stop();
      await disableEndpoint(stack.db, 'after-stop', 'operator', 'x');
      await sleep(REFRESH_MS * 4);
      expect(await admit(iso, 'after-stop')).toEqual({ kind: 'go' });
    });
  });

  describe('concurrency: per-endpoint override vs defaultCap', () => {
    it('setEndpointLimits concurrency wins over defaultCap (higher and lower)', async () => {
      await setEndpointLimits(stack.db, 'wide', { concurrency: 3 });
      await setEndpointLimits(stack.db, 'one-at-a-time', { concurrency: 1 });
      const { iso } = await make({ defaultCap: 2 });
      expect(kinds(await admitMany(iso, 'wide', 4))).toEqual(['go', 'go', 'go', 'defer:busy']);
      expect(kinds(await admitMany(iso, 'default', 3))).toEqual(['go', 'go', 'defer:busy']);
      expect(kinds(await admitMany(iso, 'one-at-a-time', 2))).toEqual(['go', 'defer:busy']);
      expect(await counterValue(metrics.endpointDeferrals, { reason: 'busy' })).toBe(3);
    });

    it('an override set, changed or cleared while running takes effect at the next refresh', async () => {
      const { iso } = await make({ defaultCap: 1 });
      expect(kinds(await admitMany(iso, 'grows', 2))).toEqual(['go', 'defer:busy']);
      await setEndpointLimits(stack.db, 'grows', { concurrency: 2 });
      await waitFor(async () => (await admit(iso, 'grows')).kind === 'go', 2_000, 'the override to be read');
      expect(kinds(await admitMany(iso, 'grows', 1))).toEqual(['defer:busy']);

      // Clearing it (null) falls back to defaultCap; a rate-only change leaves the concurrency as it is.
      await setEndpointLimits(stack.db, 'cleared', { concurrency: 5 });
      await setEndpointLimits(stack.db, 'cleared', { rateLimit: 1_000 });
      expect((await getEndpointPolicy(stack.db, 'cleared'))?.concurrency).toBe(5);
      await setEndpointLimits(stack.db, 'cleared', { concurrency: null });
      await sleep(REFRESH_MS * 3);
      expect(kinds(await admitMany(iso, 'cleared', 2))).toEqual(['go', 'defer:busy']);
    });

    it('a busy deferral backs off with the job’s starts: 50 ms doubling to 1 s, jittered by random()', async () => {
      const { iso } = await make({ defaultCap: 1, random: () => 1 });
      expect(await admit(iso, 'busy')).toEqual({ kind: 'go' });
      for (const [starts, delay] of [
        [1, 50],
        [2, 100],
        [4, 400],
        [6, 1_000],
        [50, 1_000],
      ] as const) {
        const now = Date.now();
        const d = await admit(iso, 'busy', { starts });
        expect(d).toMatchObject({ kind: 'defer', reason: 'busy' });
        if (d.kind === 'defer') {
          expect(d.atMs - now).toBeGreaterThanOrEqual(delay - 5);
          expect(d.atMs - Date.now()).toBeLessThanOrEqual(delay);
        }
      }
      // random() = 0 halves it.
      const { iso: half } = await make({ defaultCap: 1, random: () => 0 });
      const now = Date.now();
      const d = await admit(half, 'busy', { starts: 1 });
      expect(d).toMatchObject({ kind: 'defer', reason: 'busy' });
      if (d.kind === 'defer') expect(d.atMs - now).toBeGreaterThanOrEqual(20);
      if (d.kind === 'defer') expect(d.atMs - Date.now()).toBeLessThanOrEqual(25);
    });
  });

  describe('rate limit: the hook’s vs the endpoint policy’s, lowest wins', () => {
    it.each([
      ['hook 2/s below policy 5/s', 2, 5, 2],
      ['policy 2/s below hook 10/s', 10, 2, 2],
      ['hook 3/s only', 3, undefined, 3],
      // Issue 27: below the adaptive limit's start (4), so the burst meets the rate, not the limit.
      ['policy 3/s only', undefined, 3, 3],
    ])('%s: a burst of the lower rate goes, the next is deferred for rate', async (_label, hookRate, policyRate, effective) => {
      const key = `rate-${randomUUID()}`;
      if (policyRate !== undefined) await setEndpointLimits(stack.db, key, { rateLimit: policyRate });
      const { iso } = await make();
      const burst = await admitMany(iso, key, effective, hookRate !== undefined ? { hookRate } : {});
      expect(kinds(burst)).toEqual(Array(effective).fill('go'));
      const now = Date.now();
      const next = await admit(iso, key, hookRate !== undefined ? { hookRate } : {});
      expect(next).toMatchObject({ kind: 'defer', reason: 'rate' });
      // The deferral is the limiter's own time: one interval (1000 / effective ms) after the burst began.
      if (next.kind === 'defer') {
        expect(next.atMs).toBeGreaterThan(now);
        expect(next.atMs - now).toBeLessThanOrEqual(1000 / effective + 1);
        expect(next.atMs - now).toBeGreaterThanOrEqual(1000 / effective - 100);
      }
      expect(await counterValue(metrics.endpointDeferrals, { reason: 'rate' })).toBe(1);
    });

    // Issue 27: no fixed cap is no longer "no limit": the adaptive limit starts at initialLimit (4).
    it('no rate and no cap anywhere → only the adaptive limit: its first 4 go, the 5th is busy', async () => {
      const { iso } = await make();
      expect(kinds(await admitMany(iso, 'unlimited', 5))).toEqual(['go', 'go', 'go', 'go', 'defer:busy']);
    });
  });

  describe('settle() feeds the breaker', () => {
    it('endpoint failures open it (counted once); open defers; after the cooldown one probe goes and its success closes it', async () => {
      const { iso } = await make({ policy: { failureThreshold: 2, minRequests: 1_000, cooldownMs: 300, autoDisableMs: 0 } });
      const key = 'https://breaker.example.com/hook';
      await attempt(iso, key, failure('network_error'));
      expect(await counterValue(metrics.endpointTransitions, { to: 'open' })).toBe(0);
      await attempt(iso, key, failure('timeout'));
      expect(await counterValue(metrics.endpointTransitions, { to: 'open' })).toBe(1);

      const now = Date.now();
      const deferred = await admit(iso, key);
      expect(deferred).toMatchObject({ kind: 'defer', reason: 'open' });
      // Short cooldown left: the ordinary backoff (250 ms at the first start, random() = 1).
      if (deferred.kind === 'defer') expect(deferred.atMs - now).toBeGreaterThanOrEqual(245);
      expect(await counterValue(metrics.endpointDeferrals, { reason: 'open' })).toBe(1);

      let probe: string | undefined;
      await waitFor(
        async () => {
          const t = token();
          if ((await admit(iso, key, { t })).kind !== 'go') return false;
          probe = t;
          return true;
        },
        3_000,
        'the probe to be admitted',
      );
      expect(await counterValue(metrics.endpointTransitions, { to: 'half_open' })).toBe(1);
      expect(await admit(iso, key)).toMatchObject({ kind: 'defer', reason: 'probing' });
      await iso.settle(key, probe as string, success);
      expect(await counterValue(metrics.endpointTransitions, { to: 'closed' })).toBe(1);
      expect(await admit(iso, key)).toEqual({ kind: 'go' });
      expect(await counterValue(metrics.endpointTransitions)).toBe(3);
    });

    it('an open breaker with a long cooldown left defers until it ends, spread by up to 1 s', async () => {
      const policy = { failureThreshold: 1, minRequests: 1_000, cooldownMs: 60_000, autoDisableMs: 0 };
      const gate = createEndpointGate(stack.redis, { keyPrefix: stack.prefix, policy });
      const { iso: early } = await make({ gate, random: () => 0 });
      const { iso: late } = await make({ gate, random: () => 1 });
      await attempt(early, 'long-open', failure('http_error'));
      const openUntil = (await gate.snapshot('long-open'))?.openUntil?.getTime() ?? 0;
      expect(await admit(early, 'long-open')).toEqual({ kind: 'defer', reason: 'open', atMs: openUntil, inFlight: 0 });
      expect(await admit(late, 'long-open')).toEqual({ kind: 'defer', reason: 'open', atMs: openUntil + 1_000, inFlight: 0 });
    });

    it.each([
      ['configuration', failure('configuration')],
      ['cancelled', failure('cancelled')],
      ['ssrf_blocked', failure('ssrf_blocked')],
      ['payload_too_large', failure('payload_too_large')],
      ['no result', undefined],
    ])('a %s outcome frees the slot but never counts against the endpoint', async (_label, result) => {
      const { iso, gate } = await make({ defaultCap: 1, policy: { failureThreshold: 1, minRequests: 1_000, autoDisableMs: 1 } });
      for (let i = 0; i < 3; i++) await attempt(iso, 'neutral', result);
      // The slot was leased (endpointLeases.ts): the idle lease goes back with the next report.
      await waitFor(async () => (await gate.snapshot('neutral'))?.inFlight === 0, 2_000, 'the idle lease to be returned');
      expect(await gate.snapshot('neutral')).toMatchObject({ state: 'closed', inFlight: 0, consecutiveFailures: 0, lastFailureAt: null });
      expect(await counterValue(metrics.endpointTransitions)).toBe(0);
      expect(await getEndpointPolicy(stack.db, 'neutral')).toBeUndefined();
    });

    it('settle() never throws, even when Redis does not answer', async () => {
      const offline = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      offline.on('error', () => undefined); // refused on purpose
      try {
        const { iso } = await make({ gate: createEndpointGate(offline, { keyPrefix: stack.prefix }) });
        await expect(iso.settle('k', token(), failure('timeout'))).resolves.toBeUndefined();
        await expect(iso.settle('k', token(), success)).resolves.toBeUndefined();
      } finally {
        offline.disconnect();
      }
    });
  });

  describe('auto-disable', () => {
    const AUTO: Partial<BreakerPolicy> = { failureThreshold: 100, minRequests: 1_000, autoDisableMs: 200 };

    it('a failure reaching autoDisableMs with no success disables the endpoint in Postgres (by auto), counted once, then held', async () => {
      const { iso, gate } = await make({ policy: AUTO });
      const key = 'https://dead.example.com/hook';
      await attempt(iso, key, failure('http_error'));
      expect(await getEndpointPolicy(stack.db, key)).toBeUndefined();
      const straggler = token();
      expect(await admit(iso, key, { t: straggler })).toEqual({ kind: 'go' });

      const failingSince = (await gate.snapshot(key))?.failingSince?.getTime() ?? 0;
      await sleep(failingSince + 200 - Date.now() + 20);
      await attempt(iso, key, failure('timeout'));

      // N2: auto-disable is the failing tenant's own (here the default tenant's).
      const policy = await getEndpointPolicy(stack.db, { tenant: 'default', endpoint: key });
      expect(policy).toMatchObject({ key, tenant: 'default', disabledBy: 'auto', disabledAt: expect.any(Date), concurrency: null, rateLimit: null });
      expect(policy?.disabledReason).toMatch(/no successful delivery for [\d.]+ h/);
      expect(await counterValue(metrics.endpointTransitions, { to: 'disabled' })).toBe(1);
      // settle() re-read the policies: the very next admit is held.
      expect(await admit(iso, key)).toEqual({ kind: 'hold' });

      // A straggler failing later neither re-disables nor counts again.
      await iso.settle(key, straggler, failure('network_error'));
      expect(await counterValue(metrics.endpointTransitions, { to: 'disabled' })).toBe(1);
      expect((await getEndpointPolicy(stack.db, { tenant: 'default', endpoint: key }))?.disabledAt).toEqual(policy?.disabledAt);
      expect((await iso.stateCounts()).disabled).toBe(1);
    });

    it('an endpoint an operator disabled keeps the operator’s reason; auto-disable does not count it', async () => {
      const { iso, gate } = await make({ policy: AUTO });
      const key = 'operator-first';
      await disableEndpoint(stack.db, key, 'operator', 'known outage');
      const t1 = token();
      await gate.admit({ key, token: t1, leaseMs: LEASE_MS, cap: 0, rate: 0 });
      await iso.settle(key, t1, failure('http_error'));
      await sleep(((await gate.snapshot(key))?.failingSince?.getTime() ?? 0) + 200 - Date.now() + 20);
      await iso.settle(key, token(), failure('http_error'));
      expect(await getEndpointPolicy(stack.db, key)).toMatchObject({ disabledBy: 'operator', disabledReason: 'known outage' });
      expect(await counterValue(metrics.endpointTransitions, { to: 'disabled' })).toBe(0);
    });

    it('a success before autoDisableMs restarts the clock', async () => {
      const { iso } = await make({ policy: AUTO });
      const key = 'recovers';
      await attempt(iso, key, failure('http_error'));
      await sleep(120);
      await attempt(iso, key, success);
      await sleep(120);
      await attempt(iso, key, failure('http_error'));
      expect(await getEndpointPolicy(stack.db, key)).toBeUndefined();
      expect(await counterValue(metrics.endpointTransitions, { to: 'disabled' })).toBe(0);
    });
  });

  describe('stateCounts()', () => {
    it('reports closed, open, half_open and disabled endpoints (disabled wins over the Redis state), also as the gauge', async () => {
      let iso: EndpointIsolation | undefined;
      const gauged = createDeliveryMetrics({ processMetrics: false, endpointStates: async () => (iso ? iso.stateCounts() : {}) });
      const policy = { failureThreshold: 1, minRequests: 1_000, cooldownMs: 250, autoDisableMs: 0 };
      const made = await make({ policy, metrics: gauged });
      iso = made.iso;
      const { gate } = made;
      expect(await iso.stateCounts()).toEqual({ closed: 0, open: 0, half_open: 0, disabled: 0 });

      await attempt(iso, 'closed-1', success);
      await attempt(iso, 'closed-2', undefined);
      await attempt(iso, 'probing', failure('http_error'));
      await waitFor(async () => (await admit(iso as EndpointIsolation, 'probing')).kind === 'go', 3_000, 'the probe');
      await attempt(iso, 'open-1', failure('http_error'));
      await attempt(iso, 'disabled-seen', failure('http_error'));
      expect((await gate.snapshot('disabled-seen'))?.state).toBe('open');
      await disableEndpoint(stack.db, 'disabled-seen', 'operator', 'x');
      await disableEndpoint(stack.db, 'disabled-never-seen', 'operator', 'y');
      // A policy row with limits only is not a disabled endpoint.
      await setEndpointLimits(stack.db, 'closed-1', { concurrency: 4 });

      await waitFor(async () => (await (iso as EndpointIsolation).stateCounts()).disabled === 2, 2_000, 'the disables to be read');
      expect(await iso.stateCounts()).toEqual({ closed: 2, open: 1, half_open: 1, disabled: 2 });
      const gauge = await gauged.registry.getSingleMetricAsString('hookrelay_endpoint_state');
      expect(gauge).toContain('hookrelay_endpoint_state{state="closed"} 2');
      expect(gauge).toContain('hookrelay_endpoint_state{state="open"} 1');
      expect(gauge).toContain('hookrelay_endpoint_state{state="half_open"} 1');
      expect(gauge).toContain('hookrelay_endpoint_state{state="disabled"} 2');

      await enableEndpoint(stack.db, 'disabled-seen');
      await waitFor(async () => (await (iso as EndpointIsolation).stateCounts()).disabled === 1, 2_000, 'the enable to be read');
      expect(await iso.stateCounts()).toEqual({ closed: 2, open: 2, half_open: 1, disabled: 1 });
    });
  });
});
