/** GET /console (the overview page), /console/api/overview (its charts) and /console/api/counts (live counts). */
import { attemptsPerMinute, ledgerStats, oldestIncludingHeld } from '../../admin/ledgerStats.ts';
import type { ConsoleContext } from '../context.ts';
import { BASE, overviewPage } from '../pages.ts';
import { parseOverviewHours } from '../queryInput.ts';
import { send, sendJson } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import type { AuthedCall, Route } from '../router.ts';

const OVERVIEW_HOURS = 3;

async function overviewSeries(ctx: ConsoleContext, hours: number) {
  const since = new Date(Date.now() - hours * 3_600_000);
  const rows = await attemptsPerMinute(ctx.db, since);
  const start = Math.floor(since.getTime() / 60_000) * 60;
  const end = Math.floor(Date.now() / 60_000) * 60;
  const minutes: number[] = [];
  for (let t = start; t <= end; t += 60) minutes.push(t);
  const index = new Map(minutes.map((t, i) => [t, i]));
  const series: Record<string, number[]> = { delivered: minutes.map(() => 0), failed: minutes.map(() => 0), accepted_by_qstash: minutes.map(() => 0) };
  for (const r of rows) {
    const i = index.get(r.minute.getTime() / 1000);
    const s = series[r.outcome];
    if (i !== undefined && s) s[i] = r.count;
  }
  return { minutes, ...series };
}

async function liveCounts(ctx: ConsoleContext) {
  const [stats, queue] = await Promise.all([ledgerStats(ctx.db, ctx.settings.HOOKRELAY_QUEUE), ctx.sampler.counts()]);
  const oldest = oldestIncludingHeld(stats);
  return {
    counts: Object.fromEntries(stats.byStatus.map((s) => [s.status, s.count])),
    oldestUndeliveredAgeMs: oldest ? Date.now() - oldest.getTime() : null,
    queue: queue ?? null,
  };
}

export const overviewRoute: Route<AuthedCall> = {
  path: BASE,
  async handle({ ctx, res, csrf }) {
    const [stats, queue] = await Promise.all([ledgerStats(ctx.db, ctx.settings.HOOKRELAY_QUEUE), ctx.sampler.counts()]);
    return send(res, 200, overviewPage({ ...stats, oldestUndeliveredAt: oldestIncludingHeld(stats), now: new Date(), queue, hours: OVERVIEW_HOURS }, csrf));
  },
};

export const overviewApiRoute: Route<AuthedCall> = {
  path: `${BASE}/api/overview`,
  async handle({ ctx, res, url }) {
    const hours = parseOverviewHours(url.searchParams.get('hours'), OVERVIEW_HOURS);
    if (typeof hours === 'string') throw new HttpError(400, hours);
    const [outcomes, live] = await Promise.all([overviewSeries(ctx, hours), liveCounts(ctx)]);
    return sendJson(res, 200, { outcomes, depth: ctx.sampler.series(), ...live });
  },
};

export const countsApiRoute: Route<AuthedCall> = {
  path: `${BASE}/api/counts`,
  handle: async ({ ctx, res }) => sendJson(res, 200, await liveCounts(ctx)),
};
