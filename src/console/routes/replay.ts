/**
 * /console/replay: GET previews a filtered replay (a dry run: the matching ids, nothing changed);
 * POST replays exactly the previewed ids once the operator ticked the confirmation.
 */
import { previewReplay, replayCandidatesByFilter, replayCandidatesByIds, type ReplayResult } from '../../admin/replay.ts';
import { ReplayStatusError, FilterInputError } from '../../contract/errors.ts';
import { deliveryFilterFrom } from '../../store/deliveryFilterInput.ts';
import { runReplay } from '../context.ts';
import { filterFields, filterProblem, toFilterFields } from '../filterForm.ts';
import { BASE, messagePage, replayPreviewPage, replayResultPage } from '../pages.ts';
import { send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import type { AuthedCall, PostCall, Route } from '../router.ts';

/** A filtered replay from the console covers at most this many deliveries; more is `hookrelay replay`'s job (it shows progress, paces with --rate). */
const CONSOLE_REPLAY_MAX = 5_000;
const PREVIEW_ROWS = 200;

export const replayPreviewRoute: Route<AuthedCall> = {
  path: `${BASE}/replay`,
  async handle({ ctx, res, url, csrf }) {
    const f = filterFields(url.searchParams);
    f.status ??= 'failed';
    try {
      const problem = filterProblem(f);
      if (problem) throw new FilterInputError(problem);
      const ids = await replayCandidatesByFilter(
        ctx.db,
        deliveryFilterFrom(toFilterFields(f), (field) => field),
        false,
      );
      const rows = await previewReplay(ctx.db, ids.slice(0, PREVIEW_ROWS));
      const error =
        ids.length > CONSOLE_REPLAY_MAX
          ? `${ids.length} deliveries match: the console replays at most ${CONSOLE_REPLAY_MAX} at once. Narrow the filter, or use hookrelay replay (progress bar, --rate).`
          : undefined;
      return send(res, 200, replayPreviewPage({ filter: f, ids: error ? [] : ids, rows, shownMax: PREVIEW_ROWS, csrf, ...(error ? { error } : {}) }));
    } catch (err) {
      if (err instanceof FilterInputError) return send(res, 400, messagePage('Cannot replay', err.message, csrf));
      if (err instanceof ReplayStatusError)
        return send(res, 400, messagePage('Cannot replay', `only failed and held deliveries can be replayed (got status ${err.status})`, csrf));
      throw err;
    }
  },
};

export const replayConfirmRoute: Route<PostCall> = {
  path: `${BASE}/replay`,
  async handle({ ctx, res, form, csrf }) {
    if (form.get('confirm') !== 'yes') throw new HttpError(400, 'confirm the replay (tick the box): nothing changed');
    // Exactly the previewed ids: rows that entered the filter since were not confirmed. Each is
    // re-checked (a delivered one is skipped, never re-sent).
    const previewed = (form.get('ids') ?? '').split(',').filter(Boolean);
    if (previewed.length === 0 || previewed.length > CONSOLE_REPLAY_MAX) throw new HttpError(400, 'nothing to replay in this form: open the preview again');
    const { candidates, skipped } = await replayCandidatesByIds(ctx.db, previewed, false);
    const results: ReplayResult[] = [...skipped.map((s) => ({ result: 'skipped' as const, ...s })), ...(await runReplay(ctx, candidates))];
    // not_queued rows are queued in the ledger: the worker's reconciler adds their jobs.
    const count = (r: ReplayResult['result']) => results.filter((x) => x.result === r).length;
    ctx.logger.info({ replayed: count('replayed'), skipped: skipped.length, notQueued: count('not_queued') }, 'console replay');
    return send(res, 200, replayResultPage({ results, csrf }));
  },
};
