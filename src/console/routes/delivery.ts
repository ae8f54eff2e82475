/** GET /console/deliveries/<id>: one delivery — its hook config as stored, payload and every attempt. */
import { getDeliveryRow, toDelivery } from '../../store/deliveriesRepo.ts';
import { replayableStatuses } from '../../store/replayRepo.ts';
import type { Db } from '../../store/db.ts';
import { type DeliveryDetail, deliveryPage, messagePage } from '../pages.ts';
import { parseDeliveryIdSegment, textParam } from '../queryInput.ts';
import { send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import { type AuthedCall, type Route, underBase } from '../router.ts';

async function deliveryDetail(db: Db, id: string): Promise<DeliveryDetail | undefined> {
  const row = await getDeliveryRow(db, id);
  // The ledger's own mapping (toDelivery), plus what only an operator sees: endpoint, hook snapshot, payload.
  return row ? { ...toDelivery(row), endpointKey: row.endpointKey, hook: row.hook, payload: row.payload } : undefined;
}

export const deliveryRoute: Route<AuthedCall> = {
  path: underBase('/deliveries/(.+)', 's'),
  async handle({ ctx, res, url, csrf, params: [segment = ''] }) {
    const id = parseDeliveryIdSegment(segment);
    if (typeof id !== 'string') throw new HttpError(400, id.problem);
    const d = await deliveryDetail(ctx.db, id);
    if (!d) return send(res, 404, messagePage('Not found', `No delivery ${id} in the ledger.`, csrf));
    const flash =
      textParam(url.searchParams, 'replayed') === '1'
        ? 'Replay queued: the worker re-sends it with the same delivery id.'
        : textParam(url.searchParams, 'skipped') === '1'
          ? 'Skipped: it is never sent; ordered deliveries waiting behind it go.'
          : undefined;
    return send(res, 200, deliveryPage(d, { csrf, replayable: replayableStatuses(false).includes(d.status), ...(flash ? { flash } : {}) }));
  },
};
