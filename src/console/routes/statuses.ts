/**
 * GET /console/api/statuses?ids=a,b,…: the status of each listed delivery (the replay result page
 * polls it), as `{ statuses: { id: status }, truncated, limit }`. At most `limit` ids are looked
 * up, the first ones listed; when more were sent `truncated` is true and the caller asks again
 * for the rest (ids past the limit are never dropped silently). An unknown id is absent from `statuses`.
 */
import { deliveryStatuses } from '../../store/deliveriesRepo.ts';
import { BASE } from '../pages.ts';
import { textParam } from '../queryInput.ts';
import { sendJson } from '../respond.ts';
import type { AuthedCall, Route } from '../router.ts';

const STATUSES_LIMIT = 1_000;

export const statusesApiRoute: Route<AuthedCall> = {
  path: `${BASE}/api/statuses`,
  async handle({ ctx, res, url }) {
    const listed = [
      ...new Set(
        textParam(url.searchParams, 'ids', 64 * 1024)
          .split(',')
          .filter(Boolean),
      ),
    ];
    const ids = listed.slice(0, STATUSES_LIMIT);
    const statuses = Object.fromEntries(await deliveryStatuses(ctx.db, ids));
    return sendJson(res, 200, {
      statuses,
      truncated: listed.length > ids.length,
      limit: STATUSES_LIMIT,
      ...(listed.length > ids.length ? { omitted: listed.length - ids.length } : {}),
    });
  },
};
