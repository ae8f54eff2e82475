/**
 * TEN-4 (N4) and TEN-3 (N3), the pure rules: one canonical endpoint for every spelling of one
 * receiver's URL, and what a breaker counts.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalEndpoint,
  countsAgainstEndpoint,
  DEFAULT_TIMEOUT_FLOOR_MS,
  endpointKey,
  scopedEndpointKey,
  splitScopedKey,
} from '../../../src/contract/endpoint.ts';
import { parseTenant, TenantError } from '../../../src/contract/tenant.ts';

const key = (url: string) => endpointKey({ url });

describe('TEN-4 (N4): canonical endpoint', () => {
  it('TEN-4 (N4): the 8 spellings of measurement 3 are one endpoint', () => {
    const canonical = key('http://127.0.0.1:8080/hook');
    expect(canonical).toBe('http://127.0.0.1:8080/hook');
    for (const variant of [
      'http://127.0.0.1:8080/hook/',
      'http://127.0.0.1:8080//hook',
      'http://127.0.0.1:8080/hook/.',
      'http://127.0.0.1:8080/%68ook',
      'http://127.0.0.1:8080/hook;x=1',
      'http://127.0.0.1:8080/HOOK',
      'http://localhost:8080/hook',
      'http://[::ffff:7f00:1]:8080/hook',
    ])
      expect(key(variant), variant).toBe(canonical);
  });

  it('TEN-4 (N4): scheme and host lower-cased, default port dropped, IPv4 notations and mapped IPv6 one host, query and fragment not part of it', () => {
    expect(key('HTTPS://Hooks.Example.COM:443/a')).toBe('https://hooks.example.com/a');
    expect(key('http://hooks.example.com:80/a?token=x#frag')).toBe('http://hooks.example.com/a');
    expect(key('http://2130706433:9/a')).toBe('http://127.0.0.1:9/a');
    expect(key('http://[::1]:9/a')).toBe('http://127.0.0.1:9/a');
    // Every loopback address and the unspecified ones Linux connects to loopback.
    for (const host of ['127.0.0.2', '127.1', '0.0.0.0', '[::]', '[::ffff:127.0.0.9]', 'LOCALHOST.'])
      expect(key(`http://${host}:9/a`), host).toBe('http://127.0.0.1:9/a');
    expect(key('http://[::ffff:10.0.0.1]/a')).toBe('http://10.0.0.1/a');
    expect(key('http://hooks.example.com./a')).toBe('http://hooks.example.com/a');
    // Another port, another scheme, another path: another endpoint.
    expect(key('http://127.0.0.1:8081/hook')).not.toBe(key('http://127.0.0.1:8080/hook'));
    expect(key('https://127.0.0.1:8080/hook')).not.toBe(key('http://127.0.0.1:8080/hook'));
    expect(key('http://127.0.0.1:8080/hook2')).not.toBe(key('http://127.0.0.1:8080/hook'));
  });

  it('TEN-4 (N4): the path: dot segments resolved, only unreserved escapes decoded, params cut per segment', () => {
    expect(key('https://h.example/a/b/../c/./d')).toBe('https://h.example/a/c/d');
    expect(key('https://h.example/a/%2e%2e/b')).toBe('https://h.example/b');
    expect(key('https://h.example/a%2Fb')).toBe('https://h.example/a%2fb'); // an escaped slash is not a slash
    expect(key('https://h.example/a%7Eb')).toBe('https://h.example/a~b');
    expect(key('https://h.example/a;v=1/b;x')).toBe('https://h.example/a/b');
    expect(key('https://h.example/')).toBe('https://h.example/');
    expect(key('https://h.example')).toBe('https://h.example/');
  });

  it('TEN-4 (N4): relative (app:) URLs are dot-normalised the same way', () => {
    expect(key('/hooks/./x/../agent/')).toBe('app:/hooks/agent');
    expect(key('/Hooks//Agent;v=2?x=1')).toBe('app:/hooks/agent');
  });

  it('TEN-4 (N4): an operator names an endpoint by any spelling, or by a label key as `endpoints list` prints it', () => {
    expect(canonicalEndpoint('http://LOCALHOST:8080//hook/')).toBe('http://127.0.0.1:8080/hook');
    expect(canonicalEndpoint('HTTP://H.example:80#agent')).toBe('http://h.example#agent');
    expect(endpointKey({ url: 'http://H.example:80/x', endpoint: 'agent' })).toBe('http://h.example#agent');
  });

  it('TEN-4 (N2): a tenant scopes a key without ambiguity; the default tenant keeps the bare key', () => {
    const e = key('https://h.example/a');
    expect(scopedEndpointKey('default', e)).toBe(e);
    expect(scopedEndpointKey('acme', e)).toBe('acme|https://h.example/a');
    expect(splitScopedKey('acme|https://h.example/a')).toEqual({ tenant: 'acme', endpoint: e });
    expect(splitScopedKey('*|https://h.example/a')).toEqual({ tenant: '*', endpoint: e });
    // A label may hold `|`: a key that does not start with a tenant is the default tenant's.
    expect(splitScopedKey('https://h.example#a|b')).toEqual({ tenant: 'default', endpoint: 'https://h.example#a|b' });
  });
});

describe('TEN-3 (N3): what a breaker counts', () => {
  const at = (errorClass: string, httpStatus?: number, timeoutMs = DEFAULT_TIMEOUT_FLOOR_MS) =>
    countsAgainstEndpoint({ errorClass, httpStatus, timeoutMs, floorMs: DEFAULT_TIMEOUT_FLOOR_MS });
  it('TEN-3 (N3): refused/reset/DNS/TLS, 5xx, 429, 408 and timeouts at the floor count', () => {
    expect(at('network_error')).toBe(true);
    for (const s of [500, 502, 503, 504, 429, 408]) expect(at('http_error', s), String(s)).toBe(true);
    expect(at('timeout')).toBe(true);
    expect(at('timeout', undefined, DEFAULT_TIMEOUT_FLOOR_MS + 1)).toBe(true);
  });
  it('TEN-3 (N3): other 4xx, 3xx, a timeout shorter than the floor and local problems never count', () => {
    for (const s of [400, 401, 403, 404, 409, 410, 413, 422, 301]) expect(at('http_error', s), String(s)).toBe(false);
    expect(at('timeout', undefined, 1)).toBe(false);
    expect(at('timeout', undefined, DEFAULT_TIMEOUT_FLOOR_MS - 1)).toBe(false);
    for (const c of ['configuration', 'ssrf_blocked', 'cancelled', 'payload_too_large']) expect(at(c)).toBe(false);
  });
});

describe('TEN-1 (N1): the tenant token', () => {
  it('TEN-1 (N1): default, bounded, the error names the field', () => {
    expect(parseTenant(undefined)).toBe('default');
    expect(parseTenant('acme:prod-1.eu_2')).toBe('acme:prod-1.eu_2');
    expect(parseTenant('x'.repeat(128))).toHaveLength(128);
    for (const bad of ['', 'a b', 'a|b', '*', 'x'.repeat(129), 'é', 7, null]) expect(() => parseTenant(bad, 'enqueue: tenant')).toThrow(TenantError);
    expect(() => parseTenant('a/b', 'enqueue: tenant')).toThrow(/^enqueue: tenant must be 1–128 characters/);
  });
});
