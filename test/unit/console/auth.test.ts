/** console: the pure parts of the console's security — token checks, the session cookie, per-session CSRF values, origin check, escaping. */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bearerOf, csrfValue, defaultConsoleOrigins, sameOrigin, sameSecret, sessionCookie, sessionIdOf } from '../../../src/console/auth.ts';
import { html, queryString } from '../../../src/console/html.ts';

const TOKEN = 'console-token-0123456789';
const SID = 'x'.repeat(43);
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
const LOCAL = defaultConsoleOrigins(undefined, 8787);

describe('console: authentication and CSRF values', () => {
  it('SEC-H5 console: the cookie carries only the session id; the CSRF value is derived from the session, not the token', () => {
    expect(sessionCookie(SID, { maxAgeSeconds: 43_200, secure: false })).toBe(
      `hookrelay_console=${SID}; HttpOnly; SameSite=Strict; Path=/console; Max-Age=43200`,
    );
    expect(sessionCookie(SID, { maxAgeSeconds: 60, secure: true })).toMatch(/; Max-Age=60; Secure$/);
    expect(csrfValue(SID)).not.toBe(csrfValue('y'.repeat(43))); // per session
    expect(csrfValue(SID)).not.toContain(SID);
    expect(sessionIdOf(req({ cookie: `a=1; hookrelay_console=${SID}; b=2` }))).toBe(SID);
    expect(sessionIdOf(req({ cookie: 'a=1' }))).toBeUndefined();
  });

  it('console: a bearer is the token, a wrong one, or none', () => {
    expect(bearerOf(req({ authorization: `Bearer ${TOKEN}` }), TOKEN)).toBe('ok');
    expect(bearerOf(req({ authorization: 'Bearer nope' }), TOKEN)).toBe('wrong');
    expect(bearerOf(req({ cookie: `hookrelay_console=${TOKEN}` }), TOKEN)).toBe('none');
    expect(bearerOf(req({}), TOKEN)).toBe('none');
    expect(sameSecret('a', 'a')).toBe(true);
    expect(sameSecret('a', 'ab')).toBe(false);
  });

  it('SEC-H5 console: a change must come from the public origin (Origin, else Referer) — never judged by the Host header', () => {
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'http://127.0.0.1:8787' }), LOCAL)).toBe(true);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'http://localhost:8787' }), LOCAL)).toBe(true);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', referer: 'http://127.0.0.1:8787/console/endpoints' }), LOCAL)).toBe(true);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'https://evil.example' }), LOCAL)).toBe(false);
    expect(sameOrigin(req({ host: '127.0.0.1:8787', origin: 'null' }), LOCAL)).toBe(false);
    expect(sameOrigin(req({ host: '127.0.0.1:8787' }), LOCAL)).toBe(false);
    // The attacker controls Host: a matching Host/Origin pair from elsewhere is still refused.
    expect(sameOrigin(req({ host: 'evil.example', origin: 'http://evil.example' }), LOCAL)).toBe(false);
    expect(sameOrigin(req({ host: 'evil.example', origin: 'http://evil.example' }), ['https://console.example.com'])).toBe(false);
    expect(sameOrigin(req({ host: '10.0.0.5', origin: 'https://console.example.com' }), ['https://console.example.com'])).toBe(true);
    expect(sameOrigin(req({ origin: 'http://127.0.0.1:8787' }), ['https://console.example.com'])).toBe(false);
    expect(sameOrigin(req({ origin: 'http://127.0.0.1:8788' }), LOCAL)).toBe(false); // another port is another origin
  });

  it('console: the default origins are the listening address (loopback names when bound to loopback or every interface)', () => {
    expect(defaultConsoleOrigins('127.0.0.1', 8788)).toEqual(['http://127.0.0.1:8788', 'http://localhost:8788', 'http://[::1]:8788']);
    expect(defaultConsoleOrigins('0.0.0.0', 8787)).toContain('http://127.0.0.1:8787');
    expect(defaultConsoleOrigins('10.0.0.5', 8788)).toEqual(['http://10.0.0.5:8788']);
    expect(defaultConsoleOrigins('fd00::5', 8788)).toEqual(['http://[fd00::5]:8788']);
  });

  it('console: interpolated values are escaped unless they are already HTML', () => {
    const evil = '<script>alert("x")</script>';
    expect(html`<td>${evil}</td>`.value).toBe('<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>');
    expect(html`<p>${html`<b>${'a&b'}</b>`}</p>`.value).toBe('<p><b>a&amp;b</b></p>');
    expect(html`${[1, '<', null, undefined, false]}`.value).toBe('1&lt;');
    expect(queryString({ status: 'failed', hook: '', before: undefined, op: 'a b' })).toBe('?status=failed&op=a+b');
  });
});
