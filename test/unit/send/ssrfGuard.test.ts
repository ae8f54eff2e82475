import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGuardedConnector } from '../../../src/send/guardedConnector.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { checkDestination, isAddressAllowed, parseAllowedCidrs, type ResolveHost } from '../../../src/send/ssrfGuard.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';

const NONE = parseAllowedCidrs(undefined);

describe('Q5: isAddressAllowed', () => {
  const blocked = [
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.255.255.254',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.1',
    '192.88.99.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::ffff:10.0.0.1',
    '::ffff:0:a00:1',
    '::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::7f00:1',
    '64:ff9b:1::1',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd00::1',
    'fd12:3456:789a::1',
    'fec0::1',
    'ff02::1',
    'ff05::2',
    '100::1',
    '2001::1',
    '2001:2::1',
    '2001:db8::1',
    '3fff::1',
    '5f00::1',
    '4000::1',
    'not-an-ip',
    '',
    '127.1',
    '0x7f.0.0.1',
    '2130706433',
  ];
  for (const ip of blocked) {
    it(`Q5: refuses ${JSON.stringify(ip)}`, () => expect(isAddressAllowed(ip, NONE)).toBe(false));
  }

  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.0',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::1',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '[2606:4700:4700::1111]',
  ];
  for (const ip of allowed) {
    it(`Q5: allows public ${ip}`, () => expect(isAddressAllowed(ip, NONE)).toBe(true));
  }

  it('Q5: an allowed CIDR opens exactly its range', () => {
    const cidrs = parseAllowedCidrs('127.0.0.1/32, fd00::/8');
    expect(isAddressAllowed('127.0.0.1', cidrs)).toBe(true);
    expect(isAddressAllowed('127.0.0.2', cidrs)).toBe(false);
    expect(isAddressAllowed('fd00::1', cidrs)).toBe(true);
    expect(isAddressAllowed('fc00::1', cidrs)).toBe(false);
    expect(isAddressAllowed('::1', cidrs)).toBe(false);
  });

  it('Q5: an IPv4-mapped address is checked against the allowed IPv4 CIDRs too', () => {
    const cidrs = parseAllowedCidrs('127.0.0.1/32');
    expect(isAddressAllowed('::ffff:127.0.0.1', cidrs)).toBe(true);
    expect(isAddressAllowed('::ffff:127.0.0.2', cidrs)).toBe(false);
  });

  it('Q5: HOOKRELAY_ALLOWED_CIDRS parses v4 and v6, blank is none, a bad entry is named', () => {
    expect(parseAllowedCidrs('')).toEqual([]);
    expect(parseAllowedCidrs(' 10.0.0.0/8 ,, ::1/128 ').map((c) => c.text)).toEqual(['10.0.0.0/8', '::1/128']);
    expect(() => parseAllowedCidrs('10.0.0.0/8,banana')).toThrow(/HOOKRELAY_ALLOWED_CIDRS.*"banana"/);
    expect(() => parseAllowedCidrs('10.0.0.1')).toThrow(/HOOKRELAY_ALLOWED_CIDRS.*"10\.0\.0\.1"/);
    expect(() => parseAllowedCidrs('10.0.0.0/33')).toThrow(/HOOKRELAY_ALLOWED_CIDRS/);
  });
});

/** A stub DNS: names to answers; anything else fails like NXDOMAIN. */
const stubDns: ResolveHost = async (name) => {
  const hostname = name.toLowerCase().replace(/\.$/, '');
  const answers: Record<string, { address: string; family: number }[]> = {
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'rebind.test': [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ],
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
    'v6loop.test': [{ address: '::1', family: 6 }],
    'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
    'ula.test': [{ address: 'fd00::1', family: 6 }],
  };
  const found = answers[hostname];
  if (found) return found;
  if (hostname === 'localhost')
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  throw Object.assign(new Error('stub: not found'), { code: 'ENOTFOUND' });
};

describe('Q5: hostile URLs are refused before any socket opens', () => {
  let target: Receiver;
  let transport: FetchTransport;
  const connectSpy = vi.spyOn(net.Socket.prototype, 'connect');

  beforeAll(async () => {
    target = await startReceiver({ status: 200 });
    transport = new FetchTransport({ resolve: stubDns });
  });
  afterEach(() => connectSpy.mockClear());
  afterAll(async () => {
    connectSpy.mockRestore();
    await transport.close();
    await target.close();
  });

  const hostile = (port: number) => [
    `http://127.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0177.0.0.1:${port}/`,
    `http://0x7f.1:${port}/`,
    `http://0x7f000001:${port}/`,
    `http://017700000001:${port}/`,
    `http://127.000.000.001:${port}/`,
    `http://0x7F.0.0.1:${port}/`,
    `http://[::1]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[::ffff:7f00:1]:${port}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/`,
    `http://[::127.0.0.1]:${port}/`,
    `http://[64:ff9b::7f00:1]:${port}/`,
    `http://[2002:7f00:1::]:${port}/`,
    `http://0.0.0.0:${port}/`,
    `http://0:${port}/`,
    `http://[::]:${port}/`,
    `http://localhost:${port}/`,
    `http://loopback.test:${port}/`,
    `http://v6loop.test:${port}/`,
    `http://mapped.test:${port}/`,
    `http://LOCALHOST.:${port}/`,
    'http://10.0.0.1/',
    'http://10.255.255.255/',
    'http://172.16.0.1/',
    'http://172.31.255.254/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data/?token=x',
    'https://169.254.169.254/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://metadata.test/',
    'http://rebind.test/',
    'http://ula.test/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
    'http://[fc00::1]/',
    'http://[fec0::1]/',
    'http://100.64.0.1/',
    'http://100.127.255.254/',
    'http://224.0.0.1/',
    'http://239.255.255.250/',
    'http://[ff02::1]/',
    'http://192.0.2.1/',
    'http://198.51.100.7/',
    'http://203.0.113.9/',
    'http://[2001:db8::1]/',
    'http://198.18.0.1/',
    'http://240.0.0.1/',
    'http://255.255.255.255/',
    'http://192.0.0.8/',
    'http://[100::1]/',
    'http://[2001::1]/',
  ];

  it('Q5: at least 40 hostile URLs, each refused as ssrf_blocked with zero sockets and zero connections', async () => {
    const urls = hostile(target.port);
    expect(urls.length).toBeGreaterThanOrEqual(40);
    for (const url of urls) {
      const outcome = await transport.send({ url, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
      expect({ url, outcome: outcome.kind === 'error' ? outcome.errorClass : outcome.status }).toEqual({ url, outcome: 'ssrf_blocked' });
    }
    expect(connectSpy).not.toHaveBeenCalled();
    expect(target.connectionCount()).toBe(0);
    expect(target.requests).toHaveLength(0);
  });

  it('Q5: with the system resolver, localhost is refused before any socket opens', async () => {
    const system = new FetchTransport();
    try {
      for (const url of [`http://localhost:${target.port}/`, `http://LocalHost:${target.port}/x?q=1`]) {
        const outcome = await system.send({ url, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
        expect(outcome).toMatchObject({ kind: 'error', errorClass: 'ssrf_blocked' });
      }
    } finally {
      await system.close();
    }
    expect(connectSpy).not.toHaveBeenCalled();
    expect(target.connectionCount()).toBe(0);
  });

  it('Q5: the connector itself refuses an IP literal without opening a socket (second line of defence)', async () => {
    const connector = createGuardedConnector({ allowed: NONE, connectTimeoutMs: 1_000 });
    const error = await new Promise<Error | null>((resolve) =>
      connector({ hostname: '127.0.0.1', host: `127.0.0.1:${target.port}`, protocol: 'http:', port: String(target.port) }, (...args) => resolve(args[0])),
    );
    expect(error?.name).toBe('SsrfBlockedError');
    expect(connectSpy).not.toHaveBeenCalled();
    expect(target.connectionCount()).toBe(0);
  });

  it('Q5: a name answering public-then-private is refused as a whole; an unknown name is a network error', async () => {
    expect(await checkDestination('http://rebind.test/x', NONE, stubDns)).toEqual({ ok: false, errorClass: 'ssrf_blocked' });
    expect(await checkDestination('http://nope.test/x', NONE, stubDns)).toEqual({ ok: false, errorClass: 'network_error' });
    expect(await checkDestination('http://[::ffff:127.0.0.1]/', NONE, stubDns)).toEqual({ ok: false, errorClass: 'ssrf_blocked' });
    const outcome = await transport.send({ url: 'http://nope.test/', body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
    expect(outcome).toMatchObject({ kind: 'error', errorClass: 'network_error' });
    expect(connectSpy).not.toHaveBeenCalled();
  });

  it('Q5: 127.0.0.1 is reachable only when allow-listed with 127.0.0.1/32 (by IP and by name)', async () => {
    const allowedTransport = new FetchTransport({ allowedCidrs: '127.0.0.1/32', resolve: stubDns });
    try {
      const byIp = await allowedTransport.send({ url: `${target.url}/ok`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
      expect(byIp).toMatchObject({ kind: 'response', status: 200 });
      const byName = await allowedTransport.send({ url: `http://loopback.test:${target.port}/ok`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
      expect(byName).toMatchObject({ kind: 'response', status: 200 });
      // localhost also answers ::1, which is not allow-listed: refused as a whole.
      const localhost = await allowedTransport.send({ url: `http://localhost:${target.port}/`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard' });
      expect(localhost).toMatchObject({ kind: 'error', errorClass: 'ssrf_blocked' });
      expect(target.requests.map((r) => r.path)).toEqual(['/ok', '/ok']);
      // Positive control: the spy does see real connections.
      expect(connectSpy).toHaveBeenCalled();
      expect(await allowedTransport.checkDestination(`${target.url}/ok`)).toEqual({ ok: true });
    } finally {
      await allowedTransport.close();
    }
  });

  it('Q5: an operator-trusted request (trusted: true) skips the guard', async () => {
    const before = target.requests.length;
    const outcome = await transport.send({ url: `${target.url}/trusted`, body: '{}', headers: {}, timeoutMs: 2_000, read: 'discard', trusted: true });
    expect(outcome).toMatchObject({ kind: 'response', status: 200 });
    expect(target.requests.slice(before).map((r) => r.path)).toEqual(['/trusted']);
  });
});
