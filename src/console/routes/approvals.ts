/**
 * /console/approvals (A3): GET the list (pending by default; `status`, `tenant`), GET one approval,
 * POST …/decide (approve or reject, with a reason) — the same decision `hookrelay approvals
 * approve|reject` makes; the worker's sweep announces approval.resolved.
 */
import { decideApproval } from '../../approvals/decideApproval.ts';
import { ApprovalNotFoundError, ApprovalNotPendingError } from '../../contract/errors.ts';
import { APPROVAL_STATUSES, type ApprovalStatus } from '../../contract/approval.ts';
import { TENANT_PATTERN } from '../../contract/tenant.ts';
import { expireDueApprovals, getApprovalRow, listApprovalRows, toApproval } from '../../store/approvalsRepo.ts';
import { approvalPage, approvalsPage } from '../approvalPages.ts';
import { HttpError } from '../httpError.ts';
import { noticeFor, noticeQuery } from '../notices.ts';
import { BASE, messagePage } from '../pages.ts';
import { textParam } from '../queryInput.ts';
import { redirect, send } from '../respond.ts';
import { type AuthedCall, type PostCall, type Route, underBase } from '../router.ts';

const LIST_LIMIT = 200;
/** An approval id in a path: `apr_` and Crockford base32 (nothing to decode). */
const ID_SEGMENT = '(apr_[0-9A-Za-z]{1,40})';

export const approvalsRoute: Route<AuthedCall> = {
  path: `${BASE}/approvals`,
  async handle({ ctx, res, url, csrf }) {
    const status = textParam(url.searchParams, 'status') || 'pending';
    if (status !== 'all' && !(APPROVAL_STATUSES as readonly string[]).includes(status))
      throw new HttpError(400, `status must be one of ${APPROVAL_STATUSES.join(', ')}, all`);
    const tenant = textParam(url.searchParams, 'tenant', 128);
    if (tenant !== '' && !TENANT_PATTERN.test(tenant)) throw new HttpError(400, 'tenant must be 1–128 characters of A-Z a-z 0-9 . _ : -');
    textParam(url.searchParams, 'done');
    await expireDueApprovals(ctx.db, tenant === '' ? {} : { tenant }); // what shows as pending can still be decided
    const rows = await listApprovalRows(ctx.db, {
      ...(tenant !== '' ? { tenant } : {}),
      ...(status !== 'all' ? { status: status as ApprovalStatus } : {}),
      limit: LIST_LIMIT,
    });
    const flash = noticeFor(url.searchParams);
    return send(res, 200, approvalsPage({ rows: rows.map(toApproval), filter: { status, tenant }, csrf, ...(flash ? { flash } : {}) }));
  },
};

export const approvalRoute: Route<AuthedCall> = {
  path: underBase(`/approvals/${ID_SEGMENT}`),
  async handle({ ctx, res, url, csrf, params: [id = ''] }) {
    textParam(url.searchParams, 'done');
    const row = await getApprovalRow(ctx.db, id);
    if (row === undefined) return send(res, 404, messagePage('Not found', `No approval ${id}.`, csrf));
    const flash = noticeFor(url.searchParams);
    return send(res, 200, approvalPage(toApproval(row), { csrf, ...(flash ? { flash } : {}) }));
  },
};

export const decideApprovalRoute: Route<PostCall> = {
  path: underBase(`/approvals/${ID_SEGMENT}/decide`),
  async handle({ ctx, res, csrf, form, params: [id = ''] }) {
    const answer = form.get('answer');
    if (answer !== 'approve' && answer !== 'reject') throw new HttpError(400, 'answer must be approve or reject');
    const reason = (form.get('reason') ?? '').trim();
    if (reason.length > 2_000) throw new HttpError(400, 'reason is too long (at most 2,000 characters)');
    try {
      const row = await decideApproval(ctx.db, { id, answer, by: 'console', reason: reason === '' ? undefined : reason });
      ctx.logger.info({ approvalId: id, status: row.status }, 'console: approval decided');
    } catch (err) {
      if (err instanceof ApprovalNotFoundError) return send(res, 404, messagePage('Not found', `No approval ${id}.`, csrf));
      if (err instanceof ApprovalNotPendingError) return send(res, 409, messagePage('Not changed', err.message, csrf));
      throw err;
    }
    return redirect(res, `${BASE}/approvals/${encodeURIComponent(id)}${noticeQuery(answer === 'approve' ? 'approved' : 'rejected')}`);
  },
};
