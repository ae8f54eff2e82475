/**
 * /console/endpoints: GET lists every endpoint (breaker, in-flight vs cap, failure rate, hold);
 * POST …/disable and …/enable change one, as `hookrelay endpoints disable|enable` do.
 */
import { disableEndpointByOperator, enableEndpointAndReset, listEndpointViews } from '../../operator/endpointViews.ts';
import { replayCandidatesByFilter } from '../../operator/replay.ts';
import { runReplay } from '../context.ts';
import { BASE, endpointsPage } from '../pages.ts';
import { textParam } from '../queryInput.ts';
import { HttpError, redirect, send } from '../respond.ts';
import type { AuthedCall, PostCall, Route } from '../router.ts';

function endpointKey(form: URLSearchParams): string {
  const key = form.get('key') ?? '';
  if (key === '') throw new HttpError(400, 'key is required');
  return key;
}

export const endpointsRoute: Route<AuthedCall> = {
  path: `${BASE}/endpoints`,
  async handle({ ctx, res, url, csrf }) {
    const { views, redisUp } = await listEndpointViews(ctx.db, ctx.operator, ctx.settings);
    const flash = textParam(url.searchParams, 'done') || undefined;
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
    ctx.logger.info({ endpoint: key, changed, hold }, 'console: endpoint disabled');
    const kept = hold ? 'held until you enable it (hold)' : 'held, and failed at their deadlines unless you enable it first';
    return redirect(
      res,
      `${BASE}/endpoints?done=${encodeURIComponent(changed ? `Disabled ${key}: within a few seconds its deliveries are ${kept}.` : hold ? `${key} was already disabled; now on hold.` : `${key} was already disabled.`)}`,
    );
  },
};

export const enableEndpointRoute: Route<PostCall> = {
  path: `${BASE}/endpoints/enable`,
  async handle({ ctx, res, form }) {
    const key = endpointKey(form);
    const { changed, held } = await enableEndpointAndReset(ctx.db, ctx.operator, key);
    let replayed = 0;
    if (form.get('replay') === 'yes' && held > 0) {
      const ids = await replayCandidatesByFilter(ctx.db, { status: 'held', endpoint: key }, false);
      replayed = (await runReplay(ctx, ids)).filter((r) => r.result === 'replayed').length;
    }
    ctx.logger.info({ endpoint: key, changed, replayed }, 'console: endpoint enabled');
    return redirect(
      res,
      `${BASE}/endpoints?done=${encodeURIComponent(`${changed ? 'Enabled' : 'Already enabled:'} ${key}${replayed > 0 ? `; replayed ${replayed} held deliveries` : ''}.`)}`,
    );
  },
};
