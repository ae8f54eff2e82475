/**
 * Q5: which addresses an outgoing request may connect to. Private, loopback, link-local,
 * CGNAT, multicast, documentation, benchmarking and reserved IPv4/IPv6 ranges are refused,
 * and so is an IPv6 address embedding a refused IPv4 one (mapped, compatible, SIIT, NAT64,
 * 6to4) — unless the operator allows a range with HOOKRELAY_ALLOWED_CIDRS.
 * The check is made on the address actually connected to: `resolveAllowedAddresses` validates
 * every address DNS returns (the connector then connects to those), and IP-literal hosts are
 * checked directly.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { SsrfBlockedError, AllowedCidrsError } from '../contract/errors.ts';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** One allowed range, as parsed from HOOKRELAY_ALLOWED_CIDRS. */
export type Cidr = { readonly text: string; readonly kind: 'ipv4' | 'ipv6'; readonly range: [IPv4 | IPv6, number] };

/** IANA special-purpose IPv4 ranges that are never a public webhook receiver. */
const BLOCKED_IPV4 = [
  '0.0.0.0/8', // "this network", unspecified
  '10.0.0.0/8', // private
  '100.64.0.0/10', // CGNAT shared address space
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (cloud metadata)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1 documentation
  '192.88.99.0/24', // 6to4 relay anycast (deprecated)
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2 documentation
  '203.0.113.0/24', // TEST-NET-3 documentation
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, includes broadcast 255.255.255.255
].map((cidr) => ipaddr.IPv4.parseCIDR(cidr));

/** Only global unicast IPv6 (2000::/3) may be reached, minus these special blocks. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const BLOCKED_IPV6_IN_GLOBAL = [
  '2001::/23', // IETF protocol assignments: Teredo, benchmarking, ORCHID
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));

/** IPv6 forms that carry an IPv4 address in their last 32 bits. */
const EMBEDDING_LAST_32 = [
  '::ffff:0:0/96', // IPv4-mapped
  '::ffff:0:0:0/96', // SIIT IPv4-translated
  '64:ff9b::/96', // NAT64 well-known prefix
  '::/96', // IPv4-compatible (deprecated)
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');
const BYTE_MASK = 0xff;
const BITS_PER_BYTE = 8;

/**
 * Parses a comma-separated list of IPv4/IPv6 CIDRs (blank → none). A bad entry throws an
 * AllowedCidrsError naming HOOKRELAY_ALLOWED_CIDRS and the entry.
 */
export function parseAllowedCidrs(value: string | undefined): Cidr[] {
  if (value === undefined) return [];
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return entries.map((text) => {
    if (!ipaddr.isValidCIDR(text)) {
      throw new AllowedCidrsError(text);
    }
    const range = ipaddr.parseCIDR(text);
    return { text, kind: range[0].kind(), range };
  });
}

/** True when a connection to `ip` (a strict IPv4/IPv6 literal) is permitted. Anything else is refused. */
export function isAddressAllowed(ip: string, allowed: readonly Cidr[]): boolean {
  const literal = stripBrackets(ip);
  if (net.isIP(literal) === 0) return false;
  let address: IPv4 | IPv6;
  try {
    address = ipaddr.parse(literal);
  } catch {
    return false;
  }
  return address.kind() === 'ipv4' ? isIPv4Allowed(address as IPv4, allowed) : isIPv6Allowed(address as IPv6, allowed);
}

function isIPv4Allowed(address: IPv4, allowed: readonly Cidr[]): boolean {
  if (inAllowed(address, allowed, 'ipv4')) return true;
  return !BLOCKED_IPV4.some((range) => address.match(range));
}

function isIPv6Allowed(address: IPv6, allowed: readonly Cidr[]): boolean {
  if (inAllowed(address, allowed, 'ipv6')) return true;
  const embedded = embeddedIPv4(address);
  if (embedded) return isIPv4Allowed(embedded, allowed);
  if (!address.match(IPV6_GLOBAL_UNICAST)) return false;
  return !BLOCKED_IPV6_IN_GLOBAL.some((range) => address.match(range));
}

function inAllowed(address: IPv4 | IPv6, allowed: readonly Cidr[], kind: Cidr['kind']): boolean {
  return allowed.some((cidr) => cidr.kind === kind && address.match(cidr.range));
}

/** The IPv4 address an IPv6 address embeds, if it is one of the embedding forms. */
function embeddedIPv4(address: IPv6): IPv4 | undefined {
  const parts = address.parts;
  const isUnspecifiedOrLoopback = parts.slice(0, 7).every((p) => p === 0) && (parts[7] ?? 0) <= 1;
  if (isUnspecifiedOrLoopback) return undefined; // `::` and `::1` are refused as themselves
  if (EMBEDDING_LAST_32.some((range) => address.match(range))) return ipv4FromParts(parts[6] ?? 0, parts[7] ?? 0);
  if (address.match(SIX_TO_FOUR)) return ipv4FromParts(parts[1] ?? 0, parts[2] ?? 0);
  return undefined;
}

function ipv4FromParts(high: number, low: number): IPv4 {
  return new ipaddr.IPv4([high >> BITS_PER_BYTE, high & BYTE_MASK, low >> BITS_PER_BYTE, low & BYTE_MASK]);
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A resolved address (dns.lookup with `all: true`). */
export type ResolvedAddress = { address: string; family: number };
/** Resolves a host name to every address it may connect to. Injectable for tests (stub DNS). */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: ResolveHost = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** The host of a URL as a bare IP literal, or undefined when it is a name. */
export function ipLiteralHost(hostname: string): string | undefined {
  const bare = stripBrackets(hostname);
  return net.isIP(bare) === 0 ? undefined : bare;
}

/**
 * Resolves a host name once and returns its addresses only when EVERY one is allowed: a name
 * answering public-then-private is refused as a whole (DNS rebinding). The caller connects to
 * exactly these addresses (pinning), so the address checked is the address connected to.
 * Rejects with SsrfBlockedError, or with the resolver's error (ENOTFOUND, …).
 */
export async function resolveAllowedAddresses(hostname: string, allowed: readonly Cidr[], resolve: ResolveHost = systemResolver): Promise<ResolvedAddress[]> {
  const addresses = await resolve(hostname);
  if (addresses.length === 0) {
    const error: NodeJS.ErrnoException = new Error(`no address found for ${JSON.stringify(hostname)}`);
    error.code = 'ENOTFOUND';
    throw error;
  }
  if (addresses.some((a) => !isAddressAllowed(a.address, allowed))) throw new SsrfBlockedError(hostname);
  return addresses;
}

export type DestinationCheck = { ok: true } | { ok: false; errorClass: 'ssrf_blocked' | 'network_error' | 'configuration' };

/**
 * Checks a destination without connecting to it (before a QStash publish, Q5): an IP literal
 * directly, a name by resolving it and checking every address.
 */
export async function checkDestination(url: string, allowed: readonly Cidr[], resolve: ResolveHost = systemResolver): Promise<DestinationCheck> {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return { ok: false, errorClass: 'configuration' };
  }
  const literal = ipLiteralHost(hostname);
  if (literal !== undefined) return isAddressAllowed(literal, allowed) ? { ok: true } : { ok: false, errorClass: 'ssrf_blocked' };
  try {
    await resolveAllowedAddresses(hostname, allowed, resolve);
    return { ok: true };
  } catch (error) {
    return { ok: false, errorClass: error instanceof SsrfBlockedError ? 'ssrf_blocked' : 'network_error' };
  }
}
