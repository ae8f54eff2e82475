/** /console/login (GET shows the form, POST signs in with the token) and POST /console/logout. */
import { safeNext } from '../access.ts';
import { clearedCookie, sameOrigin, sameSecret, sessionCookie, sessionIdOf } from '../auth.ts';
import { readForm } from '../formReader.ts';
import { BASE, loginPage } from '../pages.ts';
import { redirect, send } from '../respond.ts';
import { HttpError } from '../errors.ts';
import type { PostCall, PublicRoute, Route } from '../router.ts';

export const loginRoute: PublicRoute = {
  // Any method: GET shows the form, POST signs in, the rest are 405.
  method: '*',
  path: `${BASE}/login`,
  async handle({ ctx, req, res, url }) {
    const { access } = ctx;
    const method = req.method ?? 'GET';
    const next = safeNext(url.searchParams.get('next'));
    if (method === 'GET') return send(res, 200, loginPage({ next }));
    if (method !== 'POST') throw new HttpError(405, 'method not allowed');
    const form = await readForm(req);
    // Login CSRF: only a form from the console's public origin may sign a browser in.
    if (!sameOrigin(req, access.allowedOrigins()) || !sameSecret(form.get('token') ?? '', access.token)) {
      return send(res, 401, loginPage({ next: safeNext(form.get('next')), error: 'Wrong token: nothing changed. Paste HOOKRELAY_CONSOLE_TOKEN exactly.' }));
    }
    // A fresh random session for every sign-in; the one this browser held before (if any) ends.
    const previous = sessionIdOf(req);
    const session = await access.withSessions(async () => {
      if (previous) await access.sessions.revoke(previous);
      return access.sessions.create();
    });
    return redirect(res, safeNext(form.get('next')), {
      'set-cookie': sessionCookie(session.id, { maxAgeSeconds: ctx.settings.HOOKRELAY_CONSOLE_SESSION_MAX_AGE, secure: access.secureCookie() }),
    });
  },
};

export const logoutRoute: Route<PostCall> = {
  path: `${BASE}/logout`,
  async handle({ ctx, res, caller }) {
    // Server-side: the session is gone, so the old cookie gets 401 wherever it is replayed.
    if (caller.kind === 'session') await ctx.access.withSessions(() => ctx.access.sessions.revoke(caller.session.id));
    return redirect(res, `${BASE}/login`, { 'set-cookie': clearedCookie(ctx.access.secureCookie()) });
  },
};
