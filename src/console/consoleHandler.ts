/**
 * The operator console: deliveries (filter, keyset pages, live counts), one delivery (its hook
 * config with templates unresolved, payload, every attempt), replay (one, or a filtered set after
 * a dry-run preview and a confirmation), endpoints (breaker, in-flight vs cap, failure rate,
 * disable / enable) and an overview (charts, oldest undelivered age). Mounted under `/console`
 * by the worker's HTTP server and by `hookrelay console`; it reads and changes the ledger and the
 * queue only through the functions the CLI uses (store/*, operator/replay.ts, operator/endpointViews.ts).
 *
 * Security: it exists only with HOOKRELAY_CONSOLE_TOKEN; every request but the sign-in page and
 * the static assets needs a live server-side session (cookie, sessions.ts) or the bearer token;
 * every POST from a cookie session needs the session's CSRF value and an Origin equal to the
 * console's public origin; a wrong or missing credential is 401 and changes nothing; a bad query
 * value is 400 (never 500); every response carries a strict Content-Security-Policy.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Settings } from '../config/settings.ts';
import type { Logger } from '../observability/logger.ts';
import { disableEndpointByOperator, enableEndpointAndReset, listEndpointViews } from '../operator/endpointViews.ts';
import type { OperatorQueue } from '../operator/operatorQueue.ts';
import { ReplayStatusError, previewReplay, replayDeliveries, replayCandidatesByFilter, replayCandidatesByIds, type ReplayResult } from '../operator/replay.ts';
import type { Db } from '../store/db.ts';
import { deliveryStatuses, getDeliveryRow, listDeliveries, toDelivery, type DeliveryFilter } from '../store/deliveriesRepo.ts';
import { FilterInputError, deliveryFilterFrom, type FilterFields } from '../store/deliveryFilterInput.ts';
import { attemptsPerMinute, ledgerStats } from '../operator/ledgerStats.ts';
import { skipAndRelease } from '../operator/skip.ts';
import { replayableStatuses } from '../store/replayRepo.ts';
import { DEFAULT_QUEUE_PREFIX } from '../queue/types.ts';
import { bearerOf, clearedCookie, csrfValue, defaultConsoleOrigins, sameOrigin, sameSecret, sessionCookie, sessionIdOf } from './auth.ts';
import { ConsoleInputError, badTextProblem, parseDeliveryIdSegment, parseOverviewHours, textParam } from './queryInput.ts';
import { createSessionStore, type Session, type SessionRedis, type SessionStore } from './sessions.ts';
import {
  BASE,
  deliveriesPage,
  deliveryPage,
  endpointsPage,
  loginPage,
  messagePage,
  overviewPage,
  replayPreviewPage,
  replayResultPage,
  skipText,
  type DeliveryDetail,
  type DeliveryFilterForm,
} from './pages.ts';

const CONSOLE_PAGE_SIZE = 50;
/** A filtered replay from the console covers at most this many deliveries; more is `hookrelay replay`'s job (it shows progress, paces with --rate). */
const CONSOLE_REPLAY_MAX = 5_000;
const PREVIEW_ROWS = 200;
const MAX_FORM_BYTES = 1024 * 1024;
const SAMPLE_EVERY_MS = 15_000;
const SAMPLES_KEPT = 6 * 60 * 4; // six hours of 15 s samples
const OVERVIEW_HOURS = 3;

/** Every console response: nothing inline, nothing from elsewhere, never framed, never cached. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts, which the CSRF check must refuse.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
};

export type ConsoleOptions = {
  db: Db;
  settings: Settings;
  operator: OperatorQueue;
  /** HOOKRELAY_CONSOLE_TOKEN. */
  token: string;
  logger: Logger;
  /** Queue-depth sampling for the overview chart (default on; tests may turn it off). */
  sampleQueue?: boolean;
  /**
   * Where the console listens, once it does (the port may be chosen at bind time): without
   * HOOKRELAY_CONSOLE_ORIGIN, browser forms must come from this address.
   */
  listening?: () => { host?: string; port: number } | undefined;
  /** Session store override (tests); default: Redis through the operator's queue connection. */
  sessions?: SessionStore;
};

/** Who is asking: the bearer token, a signed-in browser (its live session), or nobody. */
type Caller = { kind: 'bearer' } | { kind: 'session'; session: Session; csrf: string } | { kind: 'anonymous' };

/** How long a session lookup waits for Redis before the request is answered 503. */
const SESSION_REDIS_TIMEOUT_MS = 3_000;

export type Console = {
  /** Handles a request under /console; false for any other path (the caller answers it). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  close(): Promise<void>;
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** src/console or dist/console → the package's assets/console. */
const ASSET_DIR = path.resolve(HERE, '../../assets/console');
const requireFromHere = createRequire(import.meta.url);

/** The only files served: a Map, so a name such as `__proto__` or `constructor` is just unknown (404). */
const ASSETS: ReadonlyMap<string, { file: () => string; type: string }> = new Map([
  ['console.js', { file: () => path.join(ASSET_DIR, 'console.js'), type: 'text/javascript; charset=utf-8' }],
  ['console.css', { file: () => path.join(ASSET_DIR, 'console.css'), type: 'text/css; charset=utf-8' }],
  // Charts: uPlot's prebuilt browser bundle, served from the installed package (no CDN).
  ['uplot.js', { file: () => requireFromHere.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' }],
  ['uplot.css', { file: () => requireFromHere.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' }],
]);

function filterFields(q: URLSearchParams): DeliveryFilterForm {
  const f: DeliveryFilterForm = {};
  for (const k of ['status', 'operation', 'hook', 'type', 'since', 'until'] as const) {
    const v = q.get(k)?.trim();
    if (v) f[k] = v;
  }
  return f;
}

/** A filter form's values are text Postgres can store (no NUL, no control characters, bounded). */
function filterProblem(f: DeliveryFilterForm): string | undefined {
  for (const [k, v] of Object.entries(f)) {
    const problem = badTextProblem(v, k);
    if (problem) return problem;
  }
  return undefined;
}

function toFilterFields(f: DeliveryFilterForm): FilterFields {
  return { status: f.status, operation: f.operation, hook: f.hook, event: f.type, since: f.since, until: f.until };
}

export function createConsole(options: ConsoleOptions): Console {
  const { db, settings, operator, token, logger } = options;
  const sessions =
    options.sessions ??
    createSessionStore({
      redis: async () => (await operator.queue().client) as unknown as SessionRedis,
      keyPrefix: `${settings.HOOKRELAY_QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX}:${settings.HOOKRELAY_QUEUE}:console:session:`,
      token,
      timeouts: { idleSeconds: settings.HOOKRELAY_CONSOLE_IDLE_TIMEOUT, maxAgeSeconds: settings.HOOKRELAY_CONSOLE_SESSION_MAX_AGE },
    });
  /** The origins browser forms may come from: the configured public origin, else where the console listens. */
  const allowedOrigins = (): readonly string[] => {
    if (settings.HOOKRELAY_CONSOLE_ORIGIN) return [settings.HOOKRELAY_CONSOLE_ORIGIN];
    const at = options.listening?.();
    return at ? defaultConsoleOrigins(at.host, at.port) : [];
  };
  // The cookie is Secure when the public origin is https (a proxy in front terminates TLS).
  const secureCookie = () => settings.HOOKRELAY_CONSOLE_ORIGIN?.startsWith('https:') === true;
  const assetCache = new Map<string, Buffer>();
  const depth: Array<[number, number]> = [];

  const queueCounts = () => operator.fromRedis(async () => operator.queue().getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed'));
  const sample = async () => {
    const counts = await queueCounts();
    if (counts === undefined) return;
    depth.push([Math.floor(Date.now() / 1000), (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0)]);
    if (depth.length > SAMPLES_KEPT) depth.splice(0, depth.length - SAMPLES_KEPT);
  };
  let timer: NodeJS.Timeout | undefined;
  if (options.sampleQueue !== false) {
    void sample();
    timer = setInterval(() => void sample().catch(() => undefined), SAMPLE_EVERY_MS);
    timer.unref();
  }

  const send = (res: ServerResponse, status: number, body: string | Buffer, type = 'text/html; charset=utf-8', extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
    res.end(body);
  };
  const sendJson = (res: ServerResponse, status: number, value: unknown) => send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
  const redirect = (res: ServerResponse, to: string, extra: Record<string, string> = {}) => {
    res.writeHead(303, { ...SECURITY_HEADERS, location: to, ...extra });
    res.end();
  };

  async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_FORM_BYTES) throw new HttpError(413, 'form too large');
      chunks.push(chunk as Buffer);
    }
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  }

  /** Redis's answer within the timeout, else 503 (a session cannot be checked or made without it). */
  async function withSessions<T>(work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        work(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), SESSION_REDIS_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      logger.warn({ err }, 'console sessions: Redis did not answer');
      throw new HttpError(503, 'console sign-in sessions live in Redis, which does not answer now: try again shortly (Authorization: Bearer still works)');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Who is asking. A wrong bearer is anonymous even with a good cookie (the caller meant the bearer). */
  async function callerOf(req: IncomingMessage, path: string): Promise<Caller> {
    const bearer = bearerOf(req, token);
    if (bearer !== 'none') return bearer === 'ok' ? { kind: 'bearer' } : { kind: 'anonymous' };
    const id = sessionIdOf(req);
    if (id === undefined || id === '') return { kind: 'anonymous' };
    // The page's own polling (/console/api/*) does not count as activity: an open tab still idles out.
    const session = await withSessions(() => sessions.touch(id, !path.startsWith(`${BASE}/api/`)));
    return session ? { kind: 'session', session, csrf: csrfValue(session.id) } : { kind: 'anonymous' };
  }

  /** A change needs the token; from a browser session also the session's CSRF value and the public origin. */
  function assertMayChange(req: IncomingMessage, caller: Caller, form: URLSearchParams): void {
    if (caller.kind === 'anonymous') throw new HttpError(401, 'sign in with the console token');
    if (caller.kind === 'session' && (!sameSecret(form.get('_csrf') ?? '', caller.csrf) || !sameOrigin(req, allowedOrigins()))) {
      throw new HttpError(403, 'this form is stale or came from another site: reload the page and try again');
    }
  }

  async function overviewSeries(hours: number) {
    const since = new Date(Date.now() - hours * 3_600_000);
    const rows = await attemptsPerMinute(db, since);
    const start = Math.floor(since.getTime() / 60_000) * 60;
    const end = Math.floor(Date.now() / 60_000) * 60;
    const minutes: number[] = [];
    for (let t = start; t <= end; t += 60) minutes.push(t);
    const index = new Map(minutes.map((t, i) => [t, i]));
    const series: Record<string, number[]> = { delivered: minutes.map(() => 0), failed: minutes.map(() => 0), accepted_by_qstash: minutes.map(() => 0) };
    for (const r of rows) {
      const i = index.get(r.minute.getTime() / 1000);
      const s = series[r.outcome];
      if (i !== undefined && s) s[i] = r.count;
    }
    return { minutes, ...series };
  }

  async function liveCounts() {
    const [stats, queue] = await Promise.all([ledgerStats(db), queueCounts()]);
    return {
      counts: Object.fromEntries(stats.byStatus.map((s) => [s.status, s.count])),
      oldestUndeliveredAgeMs: stats.oldestUndeliveredAt ? Date.now() - stats.oldestUndeliveredAt.getTime() : null,
      queue: queue ?? null,
    };
  }

  async function deliveryDetail(id: string): Promise<DeliveryDetail | undefined> {
    const row = await getDeliveryRow(db, id);
    // The ledger's own mapping (toDelivery), plus what only an operator sees: endpoint, hook snapshot, payload.
    return row ? { ...toDelivery(row), endpointKey: row.endpointKey, hook: row.hook, payload: row.payload } : undefined;
  }

  /** The shared replay loop (operator/replay.ts); each replayed endpoint's open breaker probes now (issue 25). */
  function runReplay(ids: readonly string[]): Promise<ReplayResult[]> {
    const probe = (keys: readonly string[]) => operator.fromRedis((gate) => Promise.all(keys.map((k) => gate.probeNow(k))));
    return replayDeliveries(db, operator.queue(), ids, { includeAccepted: false, probe });
  }

  /**
   * The console's routes: method + path (exact, or a pattern whose groups are the handler's
   * params) → handler. Public routes answer before the caller is known; the others need a
   * session or the bearer token, and a POST's form is read and checked (origin, CSRF, text)
   * before its handler runs.
   */
  type Call = { req: IncomingMessage; res: ServerResponse; url: URL; p: string; params: string[] };
  type AuthedCall = Call & { caller: Exclude<Caller, { kind: 'anonymous' }>; csrf: string };
  type PostCall = AuthedCall & { form: URLSearchParams };
  type Route<C> = { path: string | RegExp; handle: (call: C) => Promise<void> };

  const publicRoutes: Array<Route<Call> & { method: 'GET' | '*' }> = [
    {
      method: 'GET',
      path: /^\/console\/assets\/(.*)$/s,
      async handle({ res, params: [name = ''] }) {
        const asset = ASSETS.get(name);
        if (!asset) throw new HttpError(404, 'no such asset');
        let body = assetCache.get(name);
        if (!body) {
          body = await readFile(asset.file());
          assetCache.set(name, body);
        }
        return send(res, 200, body, asset.type, { 'cache-control': 'private, max-age=300' });
      },
    },
    {
      // Any method: GET shows the form, POST signs in, the rest are 405.
      method: '*',
      path: `${BASE}/login`,
      async handle({ req, res, url }) {
        const method = req.method ?? 'GET';
        const next = safeNext(url.searchParams.get('next'));
        if (method === 'GET') return send(res, 200, loginPage({ next }));
        if (method !== 'POST') throw new HttpError(405, 'method not allowed');
        const form = await readForm(req);
        // Login CSRF: only a form from the console's public origin may sign a browser in.
        if (!sameOrigin(req, allowedOrigins()) || !sameSecret(form.get('token') ?? '', token)) {
          return send(res, 401, loginPage({ next: safeNext(form.get('next')), error: 'Wrong token: nothing changed. Paste HOOKRELAY_CONSOLE_TOKEN exactly.' }));
        }
        // A fresh random session for every sign-in; the one this browser held before (if any) ends.
        const previous = sessionIdOf(req);
        const session = await withSessions(async () => {
          if (previous) await sessions.revoke(previous);
          return sessions.create();
        });
        return redirect(res, safeNext(form.get('next')), {
          'set-cookie': sessionCookie(session.id, { maxAgeSeconds: settings.HOOKRELAY_CONSOLE_SESSION_MAX_AGE, secure: secureCookie() }),
        });
      },
    },
  ];

  const getRoutes: Array<Route<AuthedCall>> = [
    {
      path: BASE,
      async handle({ res, csrf }) {
        const [stats, queue] = await Promise.all([ledgerStats(db), queueCounts()]);
        return send(res, 200, overviewPage({ ...stats, now: new Date(), queue, hours: OVERVIEW_HOURS }, csrf));
      },
    },
    {
      path: `${BASE}/api/overview`,
      async handle({ res, url }) {
        const hours = parseOverviewHours(url.searchParams.get('hours'), OVERVIEW_HOURS);
        if (typeof hours === 'string') throw new HttpError(400, hours);
        const [outcomes, live] = await Promise.all([overviewSeries(hours), liveCounts()]);
        return sendJson(res, 200, { outcomes, depth: { t: depth.map((d) => d[0]), depth: depth.map((d) => d[1]) }, ...live });
      },
    },
    { path: `${BASE}/api/counts`, handle: async ({ res }) => sendJson(res, 200, await liveCounts()) },
    {
      path: `${BASE}/api/statuses`,
      async handle({ res, url }) {
        const ids = textParam(url.searchParams, 'ids', 64 * 1024)
          .split(',')
          .filter(Boolean)
          .slice(0, 1000);
        return sendJson(res, 200, Object.fromEntries(await deliveryStatuses(db, ids)));
      },
    },
    {
      path: `${BASE}/deliveries`,
      async handle({ res, url, csrf }) {
        const f = filterFields(url.searchParams);
        const before = textParam(url.searchParams, 'before') || undefined;
        const stats = await ledgerStats(db);
        let filter: DeliveryFilter;
        try {
          const problem = filterProblem(f);
          if (problem) throw new FilterInputError(problem);
          filter = deliveryFilterFrom(toFilterFields(f), (field) => (field === 'event' ? 'Event type' : field));
        } catch (err) {
          if (!(err instanceof FilterInputError)) throw err;
          return send(res, 400, deliveriesPage({ filter: f, rows: [], nextBefore: undefined, byStatus: stats.byStatus, csrf, error: err.message }));
        }
        const rows = await listDeliveries(db, { ...filter, limit: CONSOLE_PAGE_SIZE + 1, ...(before ? { beforeId: before } : {}) });
        const page = rows.slice(0, CONSOLE_PAGE_SIZE);
        return send(
          res,
          200,
          deliveriesPage({ filter: f, rows: page, nextBefore: rows.length > CONSOLE_PAGE_SIZE ? page.at(-1)?.id : undefined, byStatus: stats.byStatus, csrf }),
        );
      },
    },
    {
      path: /^\/console\/deliveries\/(.+)$/s,
      async handle({ res, url, csrf, params: [segment = ''] }) {
        const id = parseDeliveryIdSegment(segment);
        if (typeof id !== 'string') throw new HttpError(400, id.problem);
        const d = await deliveryDetail(id);
        if (!d) return send(res, 404, messagePage('Not found', `No delivery ${id} in the ledger.`, csrf));
        const flash =
          textParam(url.searchParams, 'replayed') === '1'
            ? 'Replay queued: the worker re-sends it with the same delivery id.'
            : textParam(url.searchParams, 'skipped') === '1'
              ? 'Skipped: it is never sent; ordered deliveries waiting behind it go.'
              : undefined;
        return send(res, 200, deliveryPage(d, { csrf, replayable: replayableStatuses(false).includes(d.status), ...(flash ? { flash } : {}) }));
      },
    },
    {
      path: `${BASE}/replay`,
      async handle({ res, url, csrf }) {
        const f = filterFields(url.searchParams);
        f.status ??= 'failed';
        try {
          const problem = filterProblem(f);
          if (problem) throw new FilterInputError(problem);
          const ids = await replayCandidatesByFilter(
            db,
            deliveryFilterFrom(toFilterFields(f), (field) => field),
            false,
          );
          const rows = await previewReplay(db, ids.slice(0, PREVIEW_ROWS));
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
    },
    {
      path: `${BASE}/endpoints`,
      async handle({ res, url, csrf }) {
        const { views, redisUp } = await listEndpointViews(db, operator, settings);
        const flash = textParam(url.searchParams, 'done') || undefined;
        return send(res, 200, endpointsPage({ views, redisUp, csrf, ...(flash ? { flash } : {}) }));
      },
    },
  ];

  const postRoutes: Array<Route<PostCall>> = [
    {
      path: `${BASE}/logout`,
      async handle({ res, caller }) {
        // Server-side: the session is gone, so the old cookie gets 401 wherever it is replayed.
        if (caller.kind === 'session') await withSessions(() => sessions.revoke(caller.session.id));
        return redirect(res, `${BASE}/login`, { 'set-cookie': clearedCookie(secureCookie()) });
      },
    },
    {
      path: /^\/console\/deliveries\/(.+)\/replay$/,
      async handle({ res, csrf, params: [segment = ''] }) {
        const id = parseDeliveryIdSegment(segment);
        if (typeof id !== 'string') throw new HttpError(400, id.problem);
        const { candidates, skipped, unknown } = await replayCandidatesByIds(db, [id], false);
        if (unknown.length > 0) throw new HttpError(404, `no delivery ${id}`);
        if (candidates.length === 0)
          return send(res, 409, messagePage('Not replayed', `${id}: ${skipped[0] ? skipText(skipped[0]) : 'not replayable'}; nothing changed.`, csrf));
        await runReplay(candidates);
        return redirect(res, `${BASE}/deliveries/${encodeURIComponent(id)}?replayed=1`);
      },
    },
    {
      // Issue 30: give up on a failed or held delivery (as `hookrelay deliveries skip`); the ordered ones behind it go.
      path: /^\/console\/deliveries\/(.+)\/skip$/,
      async handle({ res, csrf, params: [segment = ''] }) {
        const id = parseDeliveryIdSegment(segment);
        if (typeof id !== 'string') throw new HttpError(400, id.problem);
        const { outcomes, woken } = await skipAndRelease(db, operator.queue, [id]);
        const outcome = outcomes[0];
        if (!outcome || outcome.result === 'unknown') throw new HttpError(404, `no delivery ${id}`);
        if (outcome.result === 'not_skippable')
          return send(
            res,
            409,
            messagePage('Not skipped', `${id}: status ${outcome.status}: only failed and held deliveries can be skipped; nothing changed.`, csrf),
          );
        logger.info({ deliveryId: id, woken }, 'console: delivery skipped');
        return redirect(res, `${BASE}/deliveries/${encodeURIComponent(id)}?skipped=1`);
      },
    },
    {
      path: `${BASE}/replay`,
      async handle({ res, form, csrf }) {
        if (form.get('confirm') !== 'yes') throw new HttpError(400, 'confirm the replay (tick the box): nothing changed');
        // Exactly the previewed ids: rows that entered the filter since were not confirmed. Each is
        // re-checked (a delivered one is skipped, never re-sent).
        const previewed = (form.get('ids') ?? '').split(',').filter(Boolean);
        if (previewed.length === 0 || previewed.length > CONSOLE_REPLAY_MAX) throw new HttpError(400, 'nothing to replay in this form: open the preview again');
        const { candidates, skipped } = await replayCandidatesByIds(db, previewed, false);
        const results: ReplayResult[] = [...skipped.map((s) => ({ result: 'skipped' as const, ...s })), ...(await runReplay(candidates))];
        // not_queued rows are queued in the ledger: the worker's reconciler adds their jobs.
        const count = (r: ReplayResult['result']) => results.filter((x) => x.result === r).length;
        logger.info({ replayed: count('replayed'), skipped: skipped.length, notQueued: count('not_queued') }, 'console replay');
        return send(res, 200, replayResultPage({ results, csrf }));
      },
    },
    {
      path: `${BASE}/endpoints/disable`,
      async handle({ res, form }) {
        const key = endpointKey(form);
        const reason = (form.get('reason') ?? '').trim() || 'disabled from the console';
        // `hold` (a checkbox) keeps its deliveries with no deadline until an operator acts (issue 25).
        const hold = form.get('hold') === 'yes';
        const changed = await disableEndpointByOperator(db, key, reason.slice(0, 200), hold);
        logger.info({ endpoint: key, changed, hold }, 'console: endpoint disabled');
        const kept = hold ? 'held until you enable it (hold)' : 'held, and failed at their deadlines unless you enable it first';
        return redirect(
          res,
          `${BASE}/endpoints?done=${encodeURIComponent(changed ? `Disabled ${key}: within a few seconds its deliveries are ${kept}.` : hold ? `${key} was already disabled; now on hold.` : `${key} was already disabled.`)}`,
        );
      },
    },
    {
      path: `${BASE}/endpoints/enable`,
      async handle({ res, form }) {
        const key = endpointKey(form);
        const { changed, held } = await enableEndpointAndReset(db, operator, key);
        let replayed = 0;
        if (form.get('replay') === 'yes' && held > 0) {
          const ids = await replayCandidatesByFilter(db, { status: 'held', endpoint: key }, false);
          replayed = (await runReplay(ids)).filter((r) => r.result === 'replayed').length;
        }
        logger.info({ endpoint: key, changed, replayed }, 'console: endpoint enabled');
        return redirect(
          res,
          `${BASE}/endpoints?done=${encodeURIComponent(`${changed ? 'Enabled' : 'Already enabled:'} ${key}${replayed > 0 ? `; replayed ${replayed} held deliveries` : ''}.`)}`,
        );
      },
    },
  ];

  function endpointKey(form: URLSearchParams): string {
    const key = form.get('key') ?? '';
    if (key === '') throw new HttpError(400, 'key is required');
    return key;
  }

  /** The first route whose path matches `p`, with its params (a pattern's groups). */
  function find<C>(routes: ReadonlyArray<Route<C>>, p: string): { route: Route<C>; params: string[] } | undefined {
    for (const route of routes) {
      if (typeof route.path === 'string') {
        if (route.path === p) return { route, params: [] };
        continue;
      }
      const m = route.path.exec(p);
      if (m) return { route, params: m.slice(1) };
    }
    return undefined;
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL, ctx: { csrf?: string }): Promise<void> {
    const p = url.pathname.replace(/\/+$/, '') || BASE;
    const method = req.method ?? 'GET';

    const open = find(
      publicRoutes.filter((r) => r.method === '*' || r.method === method),
      p,
    );
    if (open) return open.route.handle({ req, res, url, p, params: open.params });

    const caller = await callerOf(req, p);
    if (caller.kind === 'anonymous') {
      if (p.startsWith(`${BASE}/api/`) || method !== 'GET')
        return sendJson(res, 401, { error: 'unauthorized: send the console token (Authorization: Bearer …) or sign in at /console/login' });
      return send(res, 401, loginPage({ next: safeNext(p + url.search) }));
    }
    // Pages rendered for a session carry its CSRF value; a bearer caller's POSTs need none.
    const csrf = caller.kind === 'session' ? caller.csrf : '';
    ctx.csrf = csrf;

    if (method === 'GET') {
      const found = find(getRoutes, p);
      if (!found) throw new HttpError(404, 'not found');
      return found.route.handle({ req, res, url, p, params: found.params, caller, csrf });
    }

    if (method !== 'POST') throw new HttpError(405, 'method not allowed');
    const form = await readForm(req);
    assertMayChange(req, caller, form);
    for (const [k, v] of form) {
      const problem = badTextProblem(v, k, 1024 * 1024);
      if (problem) throw new HttpError(400, problem);
    }
    const found = find(postRoutes, p);
    if (!found) throw new HttpError(404, 'not found');
    return found.route.handle({ req, res, url, p, params: found.params, caller, csrf, form });
  }

  return {
    async handle(req, res) {
      const raw = req.url ?? '/';
      if (!URL.canParse(raw, 'http://console.invalid')) return false;
      const url = new URL(raw, 'http://console.invalid');
      if (url.pathname !== BASE && !url.pathname.startsWith(`${BASE}/`)) return false;
      const ctx: { csrf?: string } = {};
      try {
        await route(req, res, url, ctx);
      } catch (caught) {
        const err = caught instanceof ConsoleInputError ? new HttpError(400, caught.message) : caught;
        if (err instanceof HttpError) {
          const wantsJson = url.pathname.startsWith(`${BASE}/api/`) || err.status === 401;
          if (wantsJson) sendJson(res, err.status, { error: err.message });
          else send(res, err.status, messagePage(err.status === 404 ? 'Not found' : err.status === 400 ? 'Bad request' : 'Not done', err.message, ctx.csrf));
        } else {
          logger.error({ err }, 'console request failed');
          if (!res.headersSent)
            send(
              res,
              500,
              messagePage('Error', 'The console could not answer (see the worker log). Nothing was changed by this request unless its page said so.'),
            );
        }
      }
      return true;
    },
    async close() {
      if (timer) clearInterval(timer);
    },
  };
}

/** Where to go after signing in: a console path only (no open redirect), printable ASCII only (it becomes a Location header). */
function safeNext(raw: string | null | undefined): string {
  return typeof raw === 'string' && raw.startsWith(`${BASE}`) && !raw.startsWith('//') && !raw.includes('\\') && /^[\x21-\x7e]*$/.test(raw) ? raw : BASE;
}
