// hookrelay console: live ledger counts, live statuses after a replay, and the overview charts
// (uPlot, served from the installed package). Same-origin fetches only; no inline code anywhere.
(() => {
  'use strict';
  const BASE = '/console';
  const getJson = (url) =>
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } }).then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))));

  function age(ms) {
    if (ms === null || ms === undefined) return 'none';
    const s = Math.round(ms / 1000);
    if (s < 120) return `${s} s`;
    if (s < 7200) return `${Math.round(s / 60)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  function badge(status) {
    const span = document.createElement('span');
    span.className = `badge badge-${status}`;
    span.textContent = status;
    return span;
  }

  function showLive(data) {
    for (const el of document.querySelectorAll('[data-count]')) el.textContent = String(data.counts[el.dataset.count] ?? 0);
    const oldest = document.querySelector('[data-live="oldest"]');
    if (oldest) oldest.textContent = age(data.oldestUndeliveredAgeMs);
    const depth = document.querySelector('[data-live="depth"]');
    if (depth && data.queue) depth.textContent = String((data.queue.waiting || 0) + (data.queue.delayed || 0) + (data.queue.active || 0) + (data.queue.prioritized || 0));
  }

  if (document.querySelector('[data-count]') && !document.querySelector('[data-chart]')) {
    setInterval(() => getJson(`${BASE}/api/counts`).then(showLive).catch(() => undefined), 5000);
  }

  // After a replay: each replayed row's status, every 2 s, until none is still on its way.
  const watched = document.querySelector('[data-watch]');
  if (watched && watched.dataset.watch) {
    const ids = watched.dataset.watch.split(',').filter(Boolean);
    const pending = new Set(['queued', 'in_flight', 'retrying']);
    // The API answers at most `limit` ids per call (`truncated` says more were sent): ask in chunks.
    const statusesOf = async (list) => {
      const all = {};
      for (let i = 0; i < list.length; ) {
        const answer = await getJson(`${BASE}/api/statuses?ids=${encodeURIComponent(list.slice(i, i + 500).join(','))}`);
        Object.assign(all, answer.statuses);
        i += Math.min(500, answer.limit || 500);
      }
      return all;
    };
    const tick = () =>
      statusesOf(ids)
        .then((statuses) => {
          let open = 0;
          for (const id of ids) {
            const cell = document.querySelector(`[data-status-of="${CSS.escape(id)}"]`);
            const status = statuses[id];
            if (!cell || !status) continue;
            cell.replaceChildren(badge(status));
            if (pending.has(status)) open++;
          }
          if (open === 0) clearInterval(timer);
        })
        .catch(() => undefined);
    const timer = setInterval(tick, 2000);
    tick();
  }

  // Overview charts.
  const charts = [...document.querySelectorAll('[data-chart]')];
  if (charts.length > 0 && typeof window.uPlot === 'function') {
    const plots = new Map();
    const size = (el) => ({ width: Math.max(320, el.clientWidth), height: 220 });
    const draw = (el, opts, data) => {
      const old = plots.get(el);
      if (old) {
        old.setData(data);
        return;
      }
      plots.set(el, new window.uPlot({ ...size(el), ...opts }, data, el));
    };
    const refresh = () =>
      getJson(`${BASE}/api/overview`)
        .then((o) => {
          showLive(o);
          for (const el of charts) {
            if (el.dataset.chart === 'outcomes') {
              draw(
                el,
                {
                  scales: { x: { time: true } },
                  series: [
                    {},
                    { label: 'delivered', stroke: '#1a7f37', fill: 'rgba(26,127,55,0.12)' },
                    { label: 'failed', stroke: '#cf222e', fill: 'rgba(207,34,46,0.12)' },
                    { label: 'accepted by QStash', stroke: '#8250df' },
                  ],
                  axes: [{}, { label: 'attempts / min' }],
                },
                [o.outcomes.minutes, o.outcomes.delivered, o.outcomes.failed, o.outcomes.accepted_by_qstash],
              );
            } else if (el.dataset.chart === 'depth') {
              const t = o.depth.t.length > 0 ? o.depth.t : [Math.floor(Date.now() / 1000)];
              const d = o.depth.depth.length > 0 ? o.depth.depth : [0];
              // At least the last hour on the x axis, so a console that just started does not stretch one sample over years.
              const range = (_u, min, max) => [Math.min(min, max - 3600), max];
              draw(
                el,
                { scales: { x: { time: true, range } }, series: [{}, { label: 'jobs waiting, delayed or active', stroke: '#0969da', fill: 'rgba(9,105,218,0.12)' }], axes: [{}, { label: 'jobs' }] },
                [t, d],
              );
            }
          }
        })
        .catch(() => undefined);
    refresh();
    setInterval(refresh, 10000);
    window.addEventListener('resize', () => {
      for (const [el, plot] of plots) plot.setSize(size(el));
    });
  }
})();
