/**
 * /console/endpoints: GET lists every endpoint (breaker, in-flight vs cap, failure rate, hold);
 * POST …/disable and …/enable change one, as `hookrelay endpoints disable|enable` do.
 */
import { disableEndpointByOperator, enableEndpointAndReset, listEndpointViews } from '../../admin/endpointViews.ts';
import { confirmEndpointChange } from '../../admin/policyConfirm.ts';
import { replayCandidatesByFilter } from '../../admin/replay.ts';
import { runReplay } from '../context.ts';
import { BASE, endpointsPage } from '../pages.ts';
import { type NoticeCode, noticeFor, noticeQuery } from '../notices.ts';
import { textParam } from '../queryInput.ts';
import { redirect, send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import { ALL_TENANTS, canonicalEndpoint, scopedEndpointKey, splitScopedKey } from '../../contract/endpoint.ts';
import type { AuthedCall, PostCall, Route } from '../router.ts';

/** N2/N4: the state a form names: its tenant's (or every tenant's, `all=yes`), its endpoint in canonical form. */
function endpointKey(form: URLSearchParams): string {
  const key = form.get('key') ?? '';
  if (key === '') throw new HttpError(400, 'key is required');
  const { tenant, endpoint } = splitScopedKey(key);
  return scopedEndpointKey(form.get('all') === 'yes' ? ALL_TENANTS : tenant, canonicalEndpoint(endpoint));
}

export const endpointsRoute: Route<AuthedCall> = {
  path: `${BASE}/endpoints`,
  async handle({ ctx, res, url, csrf }) {
    const { views, redisUp } = await listEndpointViews(ctx.db, ctx.operator, ctx.settings);
    // A fixed sentence per notice code; any other `done` text shows nothing (control characters are still a 400).
    textParam(url.searchParams, 'done');
    const flash = noticeFor(url.searchParams);
    return send(res, 200, endpointsPage({ views, redisUp, csrf, ...(flash ? { flash } : {}) }));
  },
};

export const disableEndpointRoute: Route<PostCall> = {
  path: `${BASE}/endpoints/disable`,
  async handle({ ctx, res, form }) {
    const key = endpointKey(form);
    const reason = (form.get('reason') ?? '').trim() || 'disabled from the console';
    // `hold` (a checkbox) keeps its deliveries with no deadline until an operator acts.
    const hold = form.get('hold') === 'yes';
    const changed = await disableEndpointByOperator(ctx.db, key, reason.slice(0, 200), hold);
    // As `hookrelay endpoints disable`: the page answers once every live worker applied it (or the bound passed).
    const confirmed = changed || hold ? await confirmEndpointChange(ctx.operator) : undefined;
    const unconfirmed = (changed || hold) && (confirmed === undefined || confirmed.pending.length > 0);
    ctx.logger.info(
      { endpoint: key, changed, hold, ...(confirmed ? { applied: confirmed.applied.length, pending: confirmed.pending } : {}) },
      'console: endpoint disabled',
    );
    if (unconfirmed)
      ctx.logger.warn({ endpoint: key, pending: confirmed?.pending ?? 'redis did not answer' }, 'console: not every live worker confirmed the disable in time');
    const code: NoticeCode = unconfirmed ? 'disabled_unconfirmed' : changed ? (hold ? 'disabled_hold' : 'disabled') : hold ? 'now_hold' : 'already_disabled';
    return redirect(res, `${BASE}/endpoints${noticeQuery(code)}`);
  },
};

export const enableEndpointRoute: Route<PostCall> = {
  path: `${BASE}/endpoints/enable`,
  async handle({ ctx, res, form }) {
    const key = endpointKey(form);
    const { changed, held } = await enableEndpointAndReset(ctx.db, ctx.operator, key);
    let replayed = 0;
    if (form.get('replay') === 'yes' && held > 0) {
      const { tenant, endpoint } = splitScopedKey(key);
      const ids = await replayCandidatesByFilter(
        ctx.db,
        { status: 'held', endpoint, queue: ctx.settings.HOOKRELAY_QUEUE, ...(tenant === ALL_TENANTS ? {} : { tenant }) },
        false,
      );
      replayed = (await runReplay(ctx, ids)).filter((r) => r.result === 'replayed').length;
    }
    ctx.logger.info({ endpoint: key, changed, replayed }, 'console: endpoint enabled');
    return redirect(res, `${BASE}/endpoints${replayed > 0 ? noticeQuery('enabled_replayed', replayed) : noticeQuery(changed ? 'enabled' : 'already_enabled')}`);
  },
};
