/** GET /console/api/statuses?ids=a,b,…: the status of each listed delivery (the replay result page polls it). */
import { deliveryStatuses } from '../../store/deliveriesRepo.ts';
import { BASE } from '../pages.ts';
import { textParam } from '../queryInput.ts';
import { sendJson } from '../respond.ts';
import type { AuthedCall, Route } from '../router.ts';

export const statusesApiRoute: Route<AuthedCall> = {
  path: `${BASE}/api/statuses`,
  async handle({ ctx, res, url }) {
    const ids = textParam(url.searchParams, 'ids', 64 * 1024)
      .split(',')
      .filter(Boolean)
      .slice(0, 1000);
    return sendJson(res, 200, Object.fromEntries(await deliveryStatuses(ctx.db, ids)));
  },
};
