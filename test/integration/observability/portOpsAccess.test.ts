/**
 * Issue 51 (PORT-4): who may read `/metrics` and `/readyz`. The decision (opsAccess.ts) is judged
 * on the socket's peer address and the request's headers, so a caller from another machine is
 * tried here through the decision itself (every test connection comes from 127.0.0.1); the server
 * is tried over real HTTP on 127.0.0.1 for what a loopback caller can vary: the Host header, relay
 * headers, a bearer token.
 */
import type http from 'node:http';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/settings.ts';
import { createCredentialGuard } from '../../../src/observability/credentialGuard.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/observability/httpServer.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { opsAccessPolicy, opsRefusal } from '../../../src/observability/opsAccess.ts';
import { rawGet as get } from '../../support/loopbackHttp.ts';

const TOKEN = 'console-token-0123456789abcdef';

const judge = (remoteAddress: string, headers: http.IncomingHttpHeaders, policy = opsAccessPolicy({})) => opsRefusal({ remoteAddress, headers }, policy);

describe('PORT-4 the operational endpoints are safe by default', () => {
  it('PORT-4 (SEC-H8): by default only loopback callers pass; a caller from another address is refused, whatever Host it sends', () => {
    for (const address of ['127.0.0.1', '127.0.0.53', '::1', '::ffff:127.0.0.1']) expect(judge(address, { host: 'localhost:8787' }), address).toBeUndefined();
    for (const address of ['10.1.2.3', '192.168.0.10', '203.0.113.9', 'fd00::1', '::ffff:10.1.2.3', '2001:db8::1'])
      expect(judge(address, { host: '127.0.0.1:8787' }), address).toBe('ops_address');
    expect(judge('not-an-address', {})).toBe('ops_address');
  });

  it('PORT-4 (SEC-H8): a request relayed by a proxy on this machine is not judged by the proxy address', () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) expect(judge('127.0.0.1', { [header]: '203.0.113.9' }), header).toBe('ops_address');
  });

  it('PORT-4 (SEC-H8): Host must be localhost, an IP literal or a configured name (DNS rebinding)', () => {
    const policy = opsAccessPolicy({ hosts: 'metrics.internal', knownUrls: ['https://hooks.example.com/base', 'https://console.example.com'] });
    for (const host of [
      'localhost',
      'localhost:8787',
      '127.0.0.1:8787',
      '[::1]:8787',
      '10.0.0.5',
      'METRICS.internal:9',
      'hooks.example.com',
      'console.example.com:443',
    ])
      expect(judge('127.0.0.1', { host }, policy), host).toBeUndefined();
    for (const host of ['attacker.example', 'attacker.example:8787', 'localhost.attacker.example', 'hooks.example.com.attacker.example'])
      expect(judge('127.0.0.1', { host }, policy), host).toBe('ops_host');
    expect(judge('127.0.0.1', { host: 'anything.example' }, opsAccessPolicy({ hosts: '*' }))).toBeUndefined();
  });

  it('PORT-4 (SEC-H8): HOOKRELAY_OPS_ALLOW_FROM widens the addresses (loopback stays), `any` opens them; bad values are refused naming the setting', () => {
    const cluster = opsAccessPolicy({ allowFrom: '10.0.0.0/8, fd00::/8' });
    expect(judge('10.20.30.40', {}, cluster)).toBeUndefined();
    expect(judge('fd00::7', {}, cluster)).toBeUndefined();
    expect(judge('127.0.0.1', {}, cluster)).toBeUndefined();
    expect(judge('192.168.1.1', {}, cluster)).toBe('ops_address');
    expect(judge('203.0.113.9', { 'x-forwarded-for': '1.2.3.4' }, opsAccessPolicy({ allowFrom: 'any' }))).toBeUndefined();
    expect(loadSettings({ HOOKRELAY_OPS_ALLOW_FROM: 'loopback,10.0.0.0/8', HOOKRELAY_OPS_HOSTS: 'a.internal,b' }).HOOKRELAY_OPS_ALLOW_FROM).toBe(
      'loopback,10.0.0.0/8',
    );
    expect(() => loadSettings({ HOOKRELAY_OPS_ALLOW_FROM: '10.0.0.0/8,everyone' })).toThrow(/HOOKRELAY_OPS_ALLOW_FROM: entry 2 of 2/);
    expect(() => loadSettings({ HOOKRELAY_OPS_HOSTS: 'http://a.example/' })).toThrow(/HOOKRELAY_OPS_HOSTS/);
  });

  describe('over HTTP on 127.0.0.1', () => {
    let server: RunningHttpServer;
    let port: number;
    beforeAll(async () => {
      const registry = new Registry();
      server = await startHttpServer({
        port: 0,
        host: '127.0.0.1',
        logger: silentLogger(),
        registry,
        readiness: { redis: async () => true },
        opsBearer: { token: TOKEN, guard: createCredentialGuard({ logger: silentLogger() }) },
      });
      port = server.port as number;
    });
    afterAll(async () => {
      await server?.close();
    });

    it('PORT-4 (SEC-H8): a foreign Host or a relayed request is 403; the console token as a bearer reads them; a wrong one is 401; /healthz stays open', async () => {
      for (const path of ['/metrics', '/readyz']) {
        expect((await get(port, path, { host: 'rebind.attacker.example' })).status, path).toBe(403);
        expect((await get(port, path, { 'x-forwarded-for': '198.51.100.4' })).status, path).toBe(403);
        expect((await get(port, path)).status, path).toBe(200);
        expect((await get(port, path, { host: 'rebind.attacker.example', authorization: `Bearer ${TOKEN}` })).status, path).toBe(200);
        expect((await get(port, path, { authorization: 'Bearer not-the-token' })).status, path).toBe(401);
      }
      expect(await get(port, '/healthz', { host: 'rebind.attacker.example', 'x-forwarded-for': '198.51.100.4' })).toEqual({ status: 200, body: 'ok' });
    });
  });
});
