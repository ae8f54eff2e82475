/** POST /console/deliveries/<id>/replay and /skip: one delivery re-sent, or given up (the ordered ones behind it go). */
import { replayCandidatesByIds } from '../../admin/replay.ts';
import { skipAndRelease } from '../../admin/skip.ts';
import { runReplay } from '../context.ts';
import { BASE, messagePage, skipText } from '../pages.ts';
import { parseDeliveryIdSegment } from '../queryInput.ts';
import { redirect, send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import { type PostCall, type Route, underBase } from '../router.ts';

function idOf(segment: string): string {
  const id = parseDeliveryIdSegment(segment);
  if (typeof id !== 'string') throw new HttpError(400, id.problem);
  return id;
}

export const replayOneRoute: Route<PostCall> = {
  path: underBase('/deliveries/(.+)/replay'),
  async handle({ ctx, res, csrf, params: [segment = ''] }) {
    const id = idOf(segment);
    const { candidates, skipped, unknown } = await replayCandidatesByIds(ctx.db, [id], false);
    if (unknown.length > 0) throw new HttpError(404, `no delivery ${id}`);
    if (candidates.length === 0)
      return send(res, 409, messagePage('Not replayed', `${id}: ${skipped[0] ? skipText(skipped[0]) : 'not replayable'}; nothing changed.`, csrf));
    await runReplay(ctx, candidates);
    return redirect(res, `${BASE}/deliveries/${encodeURIComponent(id)}?replayed=1`);
  },
};

export const skipOneRoute: Route<PostCall> = {
  // Give up on a failed or held delivery (as `hookrelay deliveries skip`); the ordered ones behind it go.
  path: underBase('/deliveries/(.+)/skip'),
  async handle({ ctx, res, csrf, params: [segment = ''] }) {
    const id = idOf(segment);
    const { outcomes, woken } = await skipAndRelease(ctx.db, ctx.operator.queue, [id]);
    const outcome = outcomes[0];
    if (!outcome || outcome.result === 'unknown') throw new HttpError(404, `no delivery ${id}`);
    if (outcome.result === 'not_skippable')
      return send(
        res,
        409,
        messagePage('Not skipped', `${id}: status ${outcome.status}: only failed and held deliveries can be skipped; nothing changed.`, csrf),
      );
    ctx.logger.info({ deliveryId: id, woken }, 'console: delivery skipped');
    return redirect(res, `${BASE}/deliveries/${encodeURIComponent(id)}?skipped=1`);
  },
};
