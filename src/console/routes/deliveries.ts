/** GET /console/deliveries: the filtered list, newest first, in keyset pages (`before`). */
import { ledgerStats } from '../../admin/ledgerStats.ts';
import { listDeliveries, type DeliveryFilter } from '../../store/deliveriesRepo.ts';
import { deliveryFilterFrom } from '../../store/deliveryFilterInput.ts';
import { FilterInputError } from '../../contract/errors.ts';
import { filterFields, filterProblem, toFilterFields } from '../filterForm.ts';
import { BASE, deliveriesPage } from '../pages.ts';
import { textParam } from '../queryInput.ts';
import { send } from '../respond.ts';
import type { AuthedCall, Route } from '../router.ts';

const CONSOLE_PAGE_SIZE = 50;

export const deliveriesRoute: Route<AuthedCall> = {
  path: `${BASE}/deliveries`,
  async handle({ ctx, res, url, csrf }) {
    const f = filterFields(url.searchParams);
    const before = textParam(url.searchParams, 'before') || undefined;
    const stats = await ledgerStats(ctx.db, ctx.settings.HOOKRELAY_QUEUE);
    let filter: DeliveryFilter;
    try {
      const problem = filterProblem(f);
      if (problem) throw new FilterInputError(problem);
      filter = deliveryFilterFrom(toFilterFields(f), (field) => (field === 'event' ? 'Event type' : field));
    } catch (err) {
      if (!(err instanceof FilterInputError)) throw err;
      return send(res, 400, deliveriesPage({ filter: f, rows: [], nextBefore: undefined, byStatus: stats.byStatus, csrf, error: err.message }));
    }
    const rows = await listDeliveries(ctx.db, { ...filter, limit: CONSOLE_PAGE_SIZE + 1, ...(before ? { beforeId: before } : {}) });
    const page = rows.slice(0, CONSOLE_PAGE_SIZE);
    return send(
      res,
      200,
      deliveriesPage({ filter: f, rows: page, nextBefore: rows.length > CONSOLE_PAGE_SIZE ? page.at(-1)?.id : undefined, byStatus: stats.byStatus, csrf }),
    );
  },
};
