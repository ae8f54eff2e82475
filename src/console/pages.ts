/**
 * The console's pages: data in, HTML out (pure). Values are escaped by `html`; hook configs are
 * the ledger's snapshots, whose `${VAR}` templates were never resolved — nothing here resolves one.
 */
import { ORDERING_BLOCKED_REASON, type DeliveryAttempt } from '../contract/delivery.ts';
import type { EndpointView } from '../admin/endpointViews.ts';
import { scopedEndpointKey } from '../contract/endpoint.ts';
import { failureText } from '../admin/failureText.ts';
import type { ReplayResult, ReplaySkip } from '../admin/replay.ts';
import { Html, html, queryString } from './html.ts';

export const BASE = '/console';

export type Section = 'overview' | 'deliveries' | 'endpoints' | 'approvals' | 'none';

/** The statuses a filter offers, in lifecycle order. */
const STATUSES = ['queued', 'in_flight', 'retrying', 'delivered', 'failed', 'held', 'skipped', 'accepted_by_qstash'] as const;

export function layout(p: { title: string; section: Section; csrf?: string; body: Html; flash?: string }): string {
  const nav = (section: Section, href: string, label: string) =>
    html`<a href="${href}"${section === p.section ? new Html(' aria-current="page"') : ''}>${label}</a>`;
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${p.title} · hookrelay console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${BASE}/assets/console.css">
<link rel="stylesheet" href="${BASE}/assets/uplot.css">
<script src="${BASE}/assets/uplot.js" defer></script>
<script src="${BASE}/assets/console.js" defer></script>
</head>
<body>
<header>
  <strong class="brand">hookrelay</strong>
  <nav>${nav('overview', BASE, 'Overview')}${nav('deliveries', `${BASE}/deliveries`, 'Deliveries')}${nav('endpoints', `${BASE}/endpoints`, 'Endpoints')}${nav('approvals', `${BASE}/approvals`, 'Approvals')}</nav>
  ${
    p.csrf === undefined
      ? ''
      : html`<form method="post" action="${BASE}/logout" class="logout"><input type="hidden" name="_csrf" value="${p.csrf}"><button type="submit">Sign out</button></form>`
  }
</header>
<main>
${p.flash ? html`<p class="flash" role="status">${p.flash}</p>` : ''}
${p.body}
</main>
</body>
</html>`}`;
}

export function loginPage(p: { error?: string; next: string }): string {
  return layout({
    title: 'Sign in',
    section: 'none',
    body: html`<section class="login">
<h1>Sign in</h1>
<p>Paste the console token (<code>HOOKRELAY_CONSOLE_TOKEN</code> of the worker or <code>hookrelay console</code>).</p>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
<form method="post" action="${BASE}/login">
  <input type="hidden" name="next" value="${p.next}">
  <label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
  <button type="submit">Sign in</button>
</form>
</section>`,
  });
}

export const ts = (d: Date | null | undefined) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '—';
export const badge = (status: string) => html`<span class="badge badge-${status}">${status}</span>`;

function ageText(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export type OverviewData = {
  byStatus: Array<{ status: string; count: number }>;
  oldestUndeliveredAt: Date | null;
  now: Date;
  queue: Record<string, number> | undefined;
  hours: number;
};

export function overviewPage(d: OverviewData, csrf: string): string {
  const counts = new Map(d.byStatus.map((s) => [s.status, s.count]));
  return layout({
    title: 'Overview',
    section: 'overview',
    csrf,
    body: html`<h1>Overview</h1>
<section class="cards">
  <div class="card"><span class="label">Oldest undelivered</span><span class="value" data-live="oldest">${d.oldestUndeliveredAt ? ageText(d.now.getTime() - d.oldestUndeliveredAt.getTime()) : 'none'}</span></div>
  ${STATUSES.map((s) => html`<a class="card" href="${BASE}/deliveries?status=${s}"><span class="label">${s}</span><span class="value" data-count="${s}">${counts.get(s) ?? 0}</span></a>`)}
  <div class="card"><span class="label">queue (waiting + delayed + active)</span><span class="value" data-live="depth">${d.queue ? String((d.queue.waiting ?? 0) + (d.queue.delayed ?? 0) + (d.queue.active ?? 0) + (d.queue.prioritized ?? 0)) : 'Redis did not answer'}</span></div>
</section>
<section class="chart-block">
  <h2>Delivery attempts per minute, by outcome (last ${d.hours} h)</h2>
  <div id="chart-outcomes" class="chart" data-chart="outcomes" data-hours="${d.hours}"></div>
</section>
<section class="chart-block">
  <h2>Queue depth (sampled every 15 s by this console process)</h2>
  <div id="chart-depth" class="chart" data-chart="depth"></div>
</section>`,
  });
}

export type DeliveryRowView = {
  id: string;
  status: string;
  eventType: string;
  hookId: string;
  operationId: string;
  /** N1: the tenant it was enqueued for. */
  tenant?: string;
  attemptCount: number;
  lastErrorClass: string | null;
  lastHttpStatus: number | null;
  /** Why it failed, when that says more than the class (a critical failure's cause, `qstash_outcome_unknown`). */
  failureReason?: string | null;
  createdAt: Date;
};

/** SEC-H7: an ordered delivery held back by a failed `block` delivery of its hook is shown blocked next to its status. */
function blockedBadge(r: { status: string; failureReason?: string | null }): Html | string {
  return r.failureReason === ORDERING_BLOCKED_REASON && r.status !== 'failed'
    ? html` <span class="badge blocked" title="an earlier delivery of its hook failed with onFailure 'block': replay or skip that one">blocked</span>`
    : '';
}

export type DeliveryFilterForm = { status?: string; operation?: string; hook?: string; type?: string; since?: string; until?: string };

export function deliveriesPage(p: {
  filter: DeliveryFilterForm;
  rows: DeliveryRowView[];
  nextBefore: string | undefined;
  byStatus: Array<{ status: string; count: number }>;
  csrf: string;
  error?: string;
}): string {
  const f = p.filter;
  const counts = new Map(p.byStatus.map((s) => [s.status, s.count]));
  const replayable = f.status === 'failed' || f.status === 'held';
  const field = (name: keyof DeliveryFilterForm, label: string, placeholder = '') =>
    html`<label>${label} <input name="${name}" value="${f[name] ?? ''}" placeholder="${placeholder}"></label>`;
  return layout({
    title: 'Deliveries',
    section: 'deliveries',
    csrf: p.csrf,
    body: html`<h1>Deliveries</h1>
<p class="counts" aria-label="ledger counts">${STATUSES.map(
      (s) => html`<a href="${BASE}/deliveries?status=${s}" class="count">${badge(s)} <span data-count="${s}">${counts.get(s) ?? 0}</span></a>`,
    )}</p>
<form method="get" action="${BASE}/deliveries" class="filters" id="filters">
  <label>Status <select name="status"><option value="">any</option>${STATUSES.map(
    (s) => html`<option value="${s}"${f.status === s ? new Html(' selected') : ''}>${s}</option>`,
  )}</select></label>
  ${field('operation', 'Operation')}${field('hook', 'Hook')}${field('type', 'Event type', 'onComplete')}
  ${field('since', 'Since', '2h, 2026-12-01T10:00Z')}${field('until', 'Until', '10m, ISO time')}
  <button type="submit">Filter</button>
</form>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
${replayable ? html`<p><a class="button" href="${BASE}/replay${queryString({ ...f })}">Replay these ${f.status} deliveries…</a></p>` : ''}
<table class="deliveries">
<thead><tr><th>ID</th><th>Status</th><th>Tenant</th><th>Event</th><th>Hook</th><th>Operation</th><th>Attempts</th><th>Last error</th><th>Created</th></tr></thead>
<tbody>
${
  p.rows.length === 0
    ? html`<tr><td colspan="9" class="empty">No deliveries match.</td></tr>`
    : p.rows.map(
        (r) =>
          html`<tr data-id="${r.id}"><td><a href="${BASE}/deliveries/${encodeURIComponent(r.id)}">${r.id}</a></td><td>${badge(r.status)}${blockedBadge(r)}</td><td>${r.tenant ?? 'default'}</td><td>${r.eventType}</td><td>${r.hookId}</td><td>${r.operationId}</td><td>${r.attemptCount}</td><td>${failureText(r) ?? '—'}</td><td>${ts(r.createdAt)}</td></tr>`,
      )
}
</tbody>
</table>
<nav class="pager">
  <a href="${BASE}/deliveries${queryString({ ...f })}">Newest</a>
  ${p.nextBefore ? html`<a href="${BASE}/deliveries${queryString({ ...f, before: p.nextBefore })}" rel="next">Older →</a>` : ''}
</nav>`,
  });
}

export type DeliveryDetail = DeliveryRowView & {
  transport: string;
  generation: number;
  endpointKey: string | null;
  hook: unknown;
  payload: unknown;
  attempts: DeliveryAttempt[];
  updatedAt: Date;
  deliveredAt: Date | null;
  nextAttemptAt: Date | null;
  /** Its place among the ordered deliveries of its operation and endpoint; null when unordered. */
  sequence?: number | null;
};

export function deliveryPage(d: DeliveryDetail, p: { csrf: string; replayable: boolean; flash?: string }): string {
  const row = (label: string, value: unknown) => html`<dt>${label}</dt><dd>${value}</dd>`;
  return layout({
    title: d.id,
    section: 'deliveries',
    csrf: p.csrf,
    flash: p.flash,
    body: html`<h1>Delivery <code>${d.id}</code> ${badge(d.status)}</h1>
<dl class="summary">
  ${row('Operation', d.operationId)}${row('Tenant', d.tenant ?? 'default')}${row('Event type', d.eventType)}${row('Hook', d.hookId)}${row('Transport', d.transport)}
  ${row('Endpoint', d.endpointKey ?? '—')}${row('Attempts', d.attemptCount)}${row('Generation', d.generation)}${typeof d.sequence === 'number' ? row('Sequence', d.sequence) : ''}
  ${row('Created', ts(d.createdAt))}${row('Updated', ts(d.updatedAt))}${row('Delivered', ts(d.deliveredAt))}${row('Next attempt', ts(d.nextAttemptAt))}
  ${row('Last error', failureText(d) ?? '—')}
</dl>
${
  p.replayable
    ? html`<form method="post" action="${BASE}/deliveries/${encodeURIComponent(d.id)}/replay" class="inline">
  <input type="hidden" name="_csrf" value="${p.csrf}">
  <button type="submit">Replay this delivery</button> <span class="hint">Re-sent with the same delivery id (<code>webhook-id</code>), so the receiver can drop a duplicate.</span>
</form>
<form method="post" action="${BASE}/deliveries/${encodeURIComponent(d.id)}/skip" class="inline">
  <input type="hidden" name="_csrf" value="${p.csrf}">
  <button type="submit">Skip this delivery</button> <span class="hint">Never sent; marked <code>skipped</code>. Ordered deliveries of its operation waiting behind it go.</span>
</form>`
    : d.status === 'delivered'
      ? html`<p class="hint">Delivered: a delivered delivery is never re-sent.</p>`
      : ''
}
<h2>Attempts</h2>
<table class="attempts">
<thead><tr><th>#</th><th>At</th><th>Transport</th><th>Outcome</th><th>Error class</th><th>HTTP</th><th>Duration</th><th>Response excerpt</th></tr></thead>
<tbody>${
      d.attempts.length === 0
        ? html`<tr><td colspan="8" class="empty">No attempt yet.</td></tr>`
        : d.attempts.map(
            (a) =>
              html`<tr><td>${a.attempt}</td><td>${a.at}</td><td>${a.transport}</td><td>${badge(a.outcome)}</td><td>${a.errorClass ?? '—'}</td><td>${a.httpStatus ?? '—'}</td><td>${Math.round(a.durationMs)} ms</td><td><code class="excerpt" data-excerpt="${a.attempt}">${a.responseExcerpt ?? ''}</code>${
                a.requestHeaders
                  ? html`<details class="sent"><summary>Request headers sent <span class="hint">(templates as templates, signature elided)</span></summary><pre class="json" data-headers="${a.attempt}">${Object.entries(
                      a.requestHeaders,
                    )
                      .map(([k, v]) => `${k}: ${v}`)
                      .join('\n')}</pre></details>`
                  : ''
              }</td></tr>`,
          )
    }</tbody>
</table>
<h2>Hook configuration <span class="hint">(as stored: <code>\${VAR}</code> templates are never resolved here)</span></h2>
<pre class="json">${JSON.stringify(d.hook, null, 2)}</pre>
<h2>Payload</h2>
${d.payload === null ? html`<p class="hint">Pruned by retention.</p>` : html`<pre class="json">${JSON.stringify(d.payload, null, 2)}</pre>`}`,
  });
}

export type ReplayPreviewRow = { id: string; status: string; hookId: string; eventType: string; lastErrorClass: string | null; createdAt: Date };

export function replayPreviewPage(p: {
  filter: DeliveryFilterForm;
  ids: string[];
  rows: ReplayPreviewRow[];
  shownMax: number;
  csrf: string;
  error?: string;
}): string {
  const total = p.ids.length;
  return layout({
    title: 'Replay',
    section: 'deliveries',
    csrf: p.csrf,
    body: html`<h1>Replay — dry run</h1>
${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ''}
<p><strong data-testid="replay-total">${total}</strong> ${p.filter.status ?? 'failed'} deliveries match this filter. Nothing has changed yet.
Each is re-sent with its same delivery id (<code>webhook-id</code>); a delivered delivery is never re-sent, and one delivered since this preview is skipped.</p>
<table class="deliveries">
<thead><tr><th>ID</th><th>Status</th><th>Event</th><th>Hook</th><th>Last error</th><th>Created</th></tr></thead>
<tbody>${p.rows.map(
      (r) =>
        html`<tr><td><a href="${BASE}/deliveries/${encodeURIComponent(r.id)}">${r.id}</a></td><td>${badge(r.status)}${blockedBadge(r)}</td><td>${r.eventType}</td><td>${r.hookId}</td><td>${r.lastErrorClass ?? '—'}</td><td>${ts(r.createdAt)}</td></tr>`,
    )}</tbody>
</table>
${total > p.shownMax ? html`<p class="hint">Showing the newest ${p.shownMax} of ${total}.</p>` : ''}
${
  total === 0
    ? html`<p><a href="${BASE}/deliveries${queryString({ ...p.filter })}">Back to the deliveries</a></p>`
    : html`<form method="post" action="${BASE}/replay" class="confirm">
  <input type="hidden" name="_csrf" value="${p.csrf}">
  ${Object.entries(p.filter).map(([k, v]) => (v ? html`<input type="hidden" name="${k}" value="${v}">` : ''))}
  <input type="hidden" name="ids" value="${p.ids.join(',')}">
  <label><input type="checkbox" name="confirm" value="yes" required> Replay these ${total} deliveries</label>
  <button type="submit">Replay ${total} deliveries</button>
</form>`
}`,
  });
}

/** The console's words for a replay skip code. */
export function skipText(skip: ReplaySkip): string {
  switch (skip.skip) {
    case 'already_delivered':
      return 'already delivered';
    case 'accepted_by_qstash':
      return 'accepted by QStash (only hookrelay replay --include-accepted replays it)';
    case 'not_replayable':
      return `status ${skip.status} is not replayable`;
    case 'taken':
      return 'delivered or replayed since it was selected';
    case 'other_queue':
      return "another queue's (its own worker's console or CLI replays it)";
  }
}

export function replayResultPage(p: { results: ReplayResult[]; csrf: string }): string {
  const n = (r: ReplayResult['result']) => p.results.filter((x) => x.result === r).length;
  const ids = p.results.filter((r) => r.result === 'replayed' || r.result === 'not_queued').map((r) => r.id);
  return layout({
    title: 'Replayed',
    section: 'deliveries',
    csrf: p.csrf,
    body: html`<h1>Replay</h1>
<p role="status">Replayed <strong>${n('replayed')}</strong>, skipped ${n('skipped')}${
      n('not_queued') > 0
        ? html`, <strong>${n('not_queued')}</strong> not added to Redis (they are queued in the ledger; the worker's reconciler enqueues them)`
        : ''
    }.</p>
<table class="deliveries" data-watch="${ids.join(',')}">
<thead><tr><th>ID</th><th>Result</th><th>Status now</th></tr></thead>
<tbody>${p.results.map(
      (r) =>
        html`<tr data-id="${r.id}"><td><a href="${BASE}/deliveries/${encodeURIComponent(r.id)}">${r.id}</a></td><td>${r.result}${r.result === 'skipped' ? ` (${skipText(r)})` : ''}</td><td data-status-of="${r.id}">${r.result === 'replayed' || r.result === 'not_queued' ? badge('queued') : '—'}</td></tr>`,
    )}</tbody>
</table>
<p class="hint">Statuses refresh every 2 s.</p>`,
  });
}

export function endpointsPage(p: { views: EndpointView[]; redisUp: boolean; csrf: string; flash?: string }): string {
  // The window counts while the breaker is closed (an opening starts a new one): not shown as 0 of 0 while it is open.
  const pct = (v: EndpointView) =>
    v.state === 'open' || v.state === 'half_open'
      ? '— (counted while closed)'
      : v.windowAttempts
        ? `${Math.round(((v.windowFailures ?? 0) / v.windowAttempts) * 100)} % of ${v.windowAttempts}`
        : '—';
  return layout({
    title: 'Endpoints',
    section: 'endpoints',
    csrf: p.csrf,
    flash: p.flash,
    body: html`<h1>Endpoints</h1>
${p.redisUp ? '' : html`<p class="error" role="alert">Redis did not answer: breaker state and in-flight counts are unknown (shown from Postgres only).</p>`}
<p class="hint">State is kept per tenant and canonical endpoint (any spelling of one URL is one endpoint). A row for all tenants is an operator's setting that applies to every tenant's state.</p>
<table class="endpoints">
<thead><tr><th>Tenant</th><th>Endpoint</th><th>State</th><th>In flight / limit / cap</th><th>Rate limit</th><th>Failures (window)</th><th>Consecutive failures</th><th>Last success</th><th>Last failure</th><th>Held</th><th></th></tr></thead>
<tbody>${
      p.views.length === 0
        ? html`<tr><td colspan="11" class="empty">No endpoints yet: a worker records one the first time it delivers to it.</td></tr>`
        : p.views.map(
            (v) => html`<tr data-endpoint="${v.key}">
<td>${v.tenant === '*' ? 'all tenants' : v.tenant}</td><td><code>${v.endpoint}</code></td><td>${badge(v.state)}${v.state === 'open' && v.openUntil ? html` <span class="hint">until ${v.openUntil}</span>` : ''}${v.hold ? html` <span class="badge hold" title="its deliveries are kept, with no deadline, until an operator acts">hold</span>` : ''}${v.disabledReason ? html` <span class="hint">${v.disabledBy}: ${v.disabledReason}</span>` : ''}</td>
<td>${v.inFlight ?? '?'} / ${v.cap === 0 ? '—' : (v.limit ?? v.cap)} / ${v.cap === 0 ? 'no cap' : v.cap}</td>
<td>${v.rateLimit === null ? '—' : `${v.rateLimit}/s`}</td><td>${pct(v)}</td><td>${v.consecutiveFailures ?? '?'}</td>
<td>${v.lastSuccessAt ?? '—'}</td><td>${v.lastFailureAt ?? '—'}</td><td>${v.held}</td>
<td>${
              v.state === 'disabled'
                ? html`<form method="post" action="${BASE}/endpoints/enable" class="inline"><input type="hidden" name="_csrf" value="${p.csrf}"><input type="hidden" name="key" value="${scopedEndpointKey(v.tenant, v.endpoint)}"><label><input type="checkbox" name="replay" value="yes" checked> replay held</label> <button type="submit">Enable</button></form>`
                : html`<form method="post" action="${BASE}/endpoints/disable" class="inline"><input type="hidden" name="_csrf" value="${p.csrf}"><input type="hidden" name="key" value="${scopedEndpointKey(v.tenant, v.endpoint)}"><input name="reason" placeholder="reason" required> <label title="keep its deliveries, with no deadline, until you act"><input type="checkbox" name="hold" value="yes"> hold</label>${v.tenant === '*' ? '' : html` <label title="disable it for every tenant, not only this one"><input type="checkbox" name="all" value="yes"> all tenants</label>`} <button type="submit">Disable</button></form>`
            }</td></tr>`,
          )
    }</tbody>
</table>`,
  });
}

export function messagePage(title: string, message: string, csrf?: string): string {
  return layout({
    title,
    section: 'none',
    ...(csrf ? { csrf } : {}),
    body: html`<h1>${title}</h1><p>${message}</p><p><a href="${BASE}">Back to the console</a></p>`,
  });
}
