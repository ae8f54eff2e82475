/** /console/login (GET shows the form, POST signs in with the token) and POST /console/logout. */
import { safeNext } from '../access.ts';
import { clearedCookie, sameOrigin, sameSecret, sessionCookie, sessionIdOf } from '../auth.ts';
import { declaredLength } from '../../observability/requestBody.ts';
import { readForm } from '../formReader.ts';
import { BASE, loginPage } from '../pages.ts';
import { redirect, send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import type { PostCall, PublicRoute, Route } from '../router.ts';

/**
 * The sign-in form holds the token and the `next` path: room for a token percent-encoded
 * throughout (3 bytes a byte) and a few KiB more. Nothing larger is read from a stranger.
 */
function signInFormBytes(token: string): number {
  return 3 * Buffer.byteLength(token) + 4 * 1024;
}

export const loginRoute: PublicRoute = {
  // Any method: GET shows the form, POST signs in, the rest are 405.
  method: '*',
  path: `${BASE}/login`,
  async handle({ ctx, req, res, io, url }) {
    const { access } = ctx;
    const method = req.method ?? 'GET';
    const next = safeNext(url.searchParams.get('next'));
    if (method === 'GET') return send(res, 200, loginPage({ next }));
    if (method !== 'POST') throw new HttpError(405, 'method not allowed');
    // Login CSRF: only a form from the console's public origin may sign a browser in — judged
    // before the form is read, so a stranger's post is answered unread.
    if (!sameOrigin(req, access.allowedOrigins())) {
      io.refused('pre_read');
      return send(
        res,
        401,
        loginPage({ next, error: "This sign-in did not come from the console's own page: nothing changed. Open the sign-in page and try again." }),
      );
    }
    const maxBytes = signInFormBytes(access.token);
    if ((declaredLength(req) ?? 0) > maxBytes) {
      io.refused('body_too_large');
      throw new HttpError(413, 'form too large');
    }
    // The guess throttle decides before the form is read: a refused attempt is never checked.
    const posted: { form?: URLSearchParams } = {};
    const verdict = await access.guard.judge('signin', req, async () => {
      posted.form = await readForm(req, res, io, { maxBytes, unauthenticated: true });
      return sameSecret(posted.form.get('token') ?? '', access.token);
    });
    if (!verdict.ok) {
      if (verdict.status === 429) {
        io.refused('throttled');
        const error = `Too many wrong tokens from this address: this one was not checked. Try again in ${verdict.retryAfterSeconds} s.`;
        return send(res, 429, loginPage({ next, error }), undefined, { 'retry-after': String(verdict.retryAfterSeconds) });
      }
      return send(
        res,
        401,
        loginPage({ next: safeNext(posted.form?.get('next')), error: 'Wrong token: nothing changed. Paste HOOKRELAY_CONSOLE_TOKEN exactly.' }),
      );
    }
    const form = posted.form as URLSearchParams;
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
