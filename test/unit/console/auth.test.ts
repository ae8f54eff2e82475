/** console: the pure parts of the console's security — token checks, derived cookie and CSRF values, origin check, escaping. */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { callerOf, csrfValue, sameOrigin, sameSecret, sessionCookie, sessionValue } from '../../../src/console/auth.ts';
import { html, queryString } from '../../../src/console/html.ts';

const TOKEN = 'console-token-0123456789';
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('console: authentication and CSRF values', () => {
  it('console: the cookie and the CSRF value are derived from the token, differ from it and from each other', () => {
    expect(sessionValue(TOKEN)).not.toContain(TOKEN);
    expect(sessionValue(TOKEN)).not.toBe(csrfValue(TOKEN));
    expect(sessionValue(TOKEN)).not.toBe(sessionValue(`${TOKEN}x`)); // rotating the token signs everyone out
    expect(sessionCookie(TOKEN, false)).toMatch(/^hookrelay_console=[\w-]+; HttpOnly; SameSite=Strict; Path=\/console; Max-Age=43200$/);
    expect(sessionCookie(TOKEN, true)).toMatch(/; Secure$/);
  });

  it('console: a caller is a bearer, a session, or anonymous — a wrong bearer or cookie is anonymous', () => {
    expect(callerOf(req({ authorization: `Bearer ${TOKEN}` }), TOKEN)).toEqual({ kind: 'bearer' });
    expect(callerOf(req({ authorization: 'Bearer nope' }), TOKEN)).toEqual({ kind: 'anonymous' });
    expect(callerOf(req({ cookie: `a=1; hookrelay_console=${sessionValue(TOKEN)}` }), TOKEN)).toEqual({ kind: 'session' });
    expect(callerOf(req({ cookie: `hookrelay_console=${TOKEN}` }), TOKEN)).toEqual({ kind: 'anonymous' }); // the raw token is not a session
    expect(callerOf(req({}), TOKEN)).toEqual({ kind: 'anonymous' });
    expect(sameSecret('a', 'a')).toBe(true);
    expect(sameSecret('a', 'ab')).toBe(false);
  });

  it('console: a change must come from the console’s own origin (Origin, else Referer); `null` and foreign origins are refused', () => {
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'http://127.0.0.1:8787' }))).toBe(true);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', referer: 'http://127.0.0.1:8787/console/endpoints' }))).toBe(true);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'https://evil.example' }))).toBe(false);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'null' }))).toBe(false);
    expect(sameOrigin(req({ host: '127.0.0.1:8787' }))).toBe(false);
  });

  it('console: interpolated values are escaped unless they are already HTML', () => {
    const evil = '<script>alert("x")</script>';
    expect(html`<td>${evil}</td>`.value).toBe('<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>');
    expect(html`<p>${html`<b>${'a&b'}</b>`}</p>`.value).toBe('<p><b>a&amp;b</b></p>');
    expect(html`${[1, '<', null, undefined, false]}`.value).toBe('1&lt;');
    expect(queryString({ status: 'failed', hook: '', before: undefined, op: 'a b' })).toBe('?status=failed&op=a+b');
  });
});
