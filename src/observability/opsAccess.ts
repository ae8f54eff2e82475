/**
 * Who may read the operational endpoints (`/metrics`, `/readyz`) without a credential: callers on
 * this machine by default (HOOKRELAY_OPS_ALLOW_FROM widens it), and only under a `Host` this
 * server knows as its own. Counts, queue names and the Node version are not for whoever reaches
 * the port; the Host check stops a DNS-rebinding page in an operator's browser (its requests
 * carry the attacker's name as Host, from a loopback address). IP-literal hosts pass: a page
 * cannot rebind a name it does not own. A request a proxy relayed (Forwarded, X-Forwarded-For,
 * X-Real-IP) is never judged by the proxy's own address. `/healthz` stays open (see httpServer.ts).
 */
import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

export type OpsAccessPolicy = {
  /** Addresses allowed without a credential: `any`, or ranges (loopback always among them). */
  allowFrom: 'any' | ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  /** Host names answered (lower case, no port), or `any`. IP literals and `localhost` always pass. */
  hosts: 'any' | ReadonlySet<string>;
};

export type OpsRefusal = 'ops_address' | 'ops_host';

const LOOPBACK: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [ipaddr.parseCIDR('127.0.0.0/8'), ipaddr.parseCIDR('::1/128')];
const RELAY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/**
 * The policy of HOOKRELAY_OPS_ALLOW_FROM (`loopback`, `any`, or comma-separated CIDRs; validated
 * by the settings) and HOOKRELAY_OPS_HOSTS (comma-separated names, `*` for any), plus the hosts
 * of the URLs this server is known by (HOOKRELAY_PUBLIC_URL, HOOKRELAY_CONSOLE_ORIGIN).
 */
export function opsAccessPolicy(p: {
  allowFrom?: string | undefined;
  hosts?: string | undefined;
  knownUrls?: ReadonlyArray<string | undefined>;
}): OpsAccessPolicy {
  const from = (p.allowFrom ?? 'loopback').trim().toLowerCase();
  const ranges =
    from === 'any'
      ? 'any'
      : [
          ...LOOPBACK,
          ...from
            .split(',')
            .map((e) => e.trim())
            .filter((e) => e !== '' && e !== 'loopback')
            .map((e) => ipaddr.parseCIDR(e)),
        ];
  const names = (p.hosts ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  const hosts = names.includes('*')
    ? 'any'
    : new Set([...names, ...(p.knownUrls ?? []).flatMap((u) => (u && URL.canParse(u) ? [new URL(u).hostname.toLowerCase()] : []))]);
  return { allowFrom: ranges, hosts };
}

/** The name in a Host header, without port or IPv6 brackets, lower case. */
function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

function hostAllowed(host: string | undefined, hosts: OpsAccessPolicy['hosts']): boolean {
  // HTTP/1.0 without a Host: no browser sends that, so it cannot be a rebinding page.
  if (host === undefined || hosts === 'any') return true;
  const name = hostName(host);
  if (name === 'localhost' || ipaddr.isValid(name)) return true;
  return hosts.has(name);
}

function addressAllowed(address: string | undefined, relayed: boolean, allowFrom: OpsAccessPolicy['allowFrom']): boolean {
  if (allowFrom === 'any') return true;
  if (relayed || address === undefined || !ipaddr.isValid(address)) return false;
  const ip = ipaddr.process(address);
  return allowFrom.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
}

/**
 * Why a caller without a credential may not read an operational endpoint, or undefined when it
 * may. `remoteAddress` is the socket's peer; `headers` the request's (Host, relay headers).
 */
export function opsRefusal(
  caller: { remoteAddress: string | undefined; headers: IncomingMessage['headers'] },
  policy: OpsAccessPolicy,
): OpsRefusal | undefined {
  const relayed = RELAY_HEADERS.some((h) => caller.headers[h] !== undefined);
  if (!addressAllowed(caller.remoteAddress, relayed, policy.allowFrom)) return 'ops_address';
  if (!hostAllowed(caller.headers.host, policy.hosts)) return 'ops_host';
  return undefined;
}
