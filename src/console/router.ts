/**
 * The console's router: method + path (exact, or a pattern whose groups are the handler's params)
 * → handler. Public routes answer before the caller is known; the others need a session or the
 * bearer token — known before a POST's form is read (a caller without one is answered unread) —
 * and a POST's form is then read and checked (origin, CSRF, text) before its handler runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpIo } from '../observability/httpServer.ts';
import { type Caller, safeNext } from './access.ts';
import type { ConsoleContext } from './context.ts';
import { MAX_FORM_BYTES, readForm } from './formReader.ts';
import { BASE, loginPage } from './pages.ts';
import { badTextProblem } from './queryInput.ts';
import { send, sendJson } from './respond.ts';
import { HttpError } from './httpError.ts';

type Call = { ctx: ConsoleContext; req: IncomingMessage; res: ServerResponse; io: HttpIo; url: URL; p: string; params: string[] };
export type AuthedCall = Call & { caller: Exclude<Caller, { kind: 'anonymous' }>; csrf: string };
export type PostCall = AuthedCall & { form: URLSearchParams };
export type Route<C> = { path: string | RegExp; handle: (call: C) => Promise<void> };
export type PublicRoute = Route<Call> & { method: 'GET' | '*' };

export type RouteTable = {
  /** Answered before the caller is known (static assets, sign-in). */
  public: readonly PublicRoute[];
  get: ReadonlyArray<Route<AuthedCall>>;
  post: ReadonlyArray<Route<PostCall>>;
};

/** A path pattern under BASE: `underBase('/deliveries/(.+)')` matches `/console/deliveries/<anything>`. */
export function underBase(pattern: string, flags = ''): RegExp {
  return new RegExp(`^${BASE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${pattern}$`, flags);
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

/** Answers one request under BASE; `state.csrf` is set once the caller is known (error pages carry it). */
export async function routeRequest(
  ctx: ConsoleContext,
  table: RouteTable,
  req: IncomingMessage,
  res: ServerResponse,
  io: HttpIo,
  url: URL,
  state: { csrf?: string },
): Promise<void> {
  const p = url.pathname.replace(/\/+$/, '') || BASE;
  const method = req.method ?? 'GET';

  const open = find(
    table.public.filter((r) => r.method === '*' || r.method === method),
    p,
  );
  if (open) return open.route.handle({ ctx, req, res, io, url, p, params: open.params });

  const caller = await ctx.access.callerOf(req, p);
  if (caller.kind === 'anonymous') {
    if (p.startsWith(`${BASE}/api/`) || method !== 'GET')
      return sendJson(res, 401, { error: `unauthorized: send the console token (Authorization: Bearer …) or sign in at ${BASE}/login` });
    return send(res, 401, loginPage({ next: safeNext(p + url.search) }));
  }
  // Pages rendered for a session carry its CSRF value; a bearer caller's POSTs need none.
  const csrf = caller.kind === 'session' ? caller.csrf : '';
  state.csrf = csrf;

  if (method === 'GET') {
    const found = find(table.get, p);
    if (!found) throw new HttpError(404, 'not found');
    return found.route.handle({ ctx, req, res, io, url, p, params: found.params, caller, csrf });
  }

  if (method !== 'POST') throw new HttpError(405, 'method not allowed');
  const form = await readForm(req, res, io, { maxBytes: MAX_FORM_BYTES, unauthenticated: false });
  ctx.access.assertMayChange(req, caller, form);
  for (const [k, v] of form) {
    const problem = badTextProblem(v, k, MAX_FORM_BYTES);
    if (problem) throw new HttpError(400, problem);
  }
  const found = find(table.post, p);
  if (!found) throw new HttpError(404, 'not found');
  return found.route.handle({ ctx, req, res, io, url, p, params: found.params, caller, csrf, form });
}
