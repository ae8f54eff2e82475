/**
 * The console's approval pages (A3): the list (pending first by default) and one approval — its
 * call as the approval redactor left it, its identity, expiry and decision — with the approve /
 * reject form (a reason, the session's CSRF value). Data in, HTML out (pure), escaped by `html`.
 */
import { APPROVAL_STATUSES, type Approval } from '../contract/approval.ts';
import { Html, html, queryString } from './html.ts';
import { BASE, badge, layout, ts } from './pages.ts';

export type ApprovalListFilter = { status: string; tenant: string };

export function approvalsPage(p: { rows: Approval[]; filter: ApprovalListFilter; csrf: string; flash?: string }): string {
  const f = p.filter;
  const options = ['pending', ...APPROVAL_STATUSES.filter((s) => s !== 'pending'), 'all'];
  return layout({
    title: 'Approvals',
    section: 'approvals',
    csrf: p.csrf,
    ...(p.flash ? { flash: p.flash } : {}),
    body: html`<h1>Approvals</h1>
<form method="get" action="${BASE}/approvals" class="filters">
  <label>Status <select name="status">${options.map((s) => html`<option value="${s}"${f.status === s ? new Html(' selected') : ''}>${s}</option>`)}</select></label>
  <label>Tenant <input name="tenant" value="${f.tenant}" placeholder="any"></label>
  <button type="submit">Filter</button>
</form>
<table class="approvals">
<thead><tr><th>ID</th><th>Status</th><th>Tenant</th><th>Operation</th><th>Tool</th><th>Why</th><th>Requested</th><th>Expires</th><th>Decided by</th></tr></thead>
<tbody>${
      p.rows.length === 0
        ? html`<tr><td colspan="9" class="empty">No ${f.status === 'all' ? '' : `${f.status} `}approvals.</td></tr>`
        : p.rows.map(
            (a) =>
              html`<tr data-approval="${a.id}"><td><a href="${BASE}/approvals/${encodeURIComponent(a.id)}">${a.id}</a></td><td>${badge(a.status)}</td><td>${a.tenant}</td><td>${a.operationId}</td><td>${a.toolCall?.name ?? a.point}</td><td>${a.escalation.reason ?? '—'}</td><td>${ts(a.requestedAt)}</td><td>${ts(a.expiresAt)}</td><td>${a.decidedBy ?? '—'}</td></tr>`,
          )
    }</tbody>
</table>
<p class="hint">Also: <code>hookrelay approvals list</code>. <a href="${BASE}/approvals${queryString({ status: 'all', tenant: f.tenant })}">Every status</a></p>`,
  });
}

export function approvalPage(a: Approval, p: { csrf: string; flash?: string }): string {
  const row = (label: string, value: unknown) => html`<dt>${label}</dt><dd>${value}</dd>`;
  const why = [a.escalation.reason, a.escalation.message].filter(Boolean).join(': ');
  return layout({
    title: a.id,
    section: 'approvals',
    csrf: p.csrf,
    ...(p.flash ? { flash: p.flash } : {}),
    body: html`<h1>Approval <code>${a.id}</code> ${badge(a.status)}</h1>
<dl class="summary">
  ${row('Tenant', a.tenant)}${row('Operation', a.operationId)}${row('Kind', a.kind)}${row('Point', a.point)}
  ${row('Tool call', a.toolCall ? `${a.toolCall.name} (${a.toolCall.id})` : '—')}${row('Why', why || '—')}
  ${row('Requested', ts(a.requestedAt))}${row('Expires', ts(a.expiresAt))}
  ${row('Decided by', a.decidedBy ? `${a.decidedBy} at ${ts(a.decidedAt)}` : '—')}${row('Reason', a.reason ?? '—')}
  ${row('Applied', a.appliedAt ? `${a.outcome ?? '—'} at ${ts(a.appliedAt)}` : '—')}
  ${row('Context identity', html`<code>${a.contextIdentity}</code>`)}
</dl>
${
  a.status === 'pending'
    ? html`<form method="post" action="${BASE}/approvals/${encodeURIComponent(a.id)}/decide" class="decide">
  <input type="hidden" name="_csrf" value="${p.csrf}">
  <label for="reason">Reason <span class="hint">(shown to the agent's operator and kept in the audit)</span></label>
  <input id="reason" name="reason" maxlength="2000">
  <button type="submit" name="answer" value="approve">Approve</button>
  <button type="submit" name="answer" value="reject">Reject</button>
  <span class="hint">A decision is made once. Approved, only this exact call — the identity above — runs, once, when its run resumes.</span>
</form>`
    : ''
}
<h2>The call <span class="hint">(as the approval redactor left it)</span></h2>
<pre class="json" data-context="${a.id}">${JSON.stringify(a.context, null, 2)}</pre>`,
  });
}
