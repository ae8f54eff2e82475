/**
 * An undici connector that never opens a socket to an address the SSRF guard refuses (Q5).
 * An IP-literal host is checked before anything else; a host name is resolved once, every
 * address is validated, and the socket is connected to those validated addresses (DNS
 * pinning: no second lookup that could answer differently). TLS still verifies the name.
 */
import { buildConnector } from 'undici';
import { SsrfBlockedError } from '../contract/errors.ts';
import { ipLiteralHost, isAddressAllowed, resolveAllowedAddresses, type Cidr, type ResolvedAddress, type ResolveHost } from './ssrfGuard.ts';

/** How many of a name's validated addresses are tried, in order, before giving up. */
const MAX_ADDRESS_ATTEMPTS = 2;

export type GuardedConnectorOptions = {
  allowed: readonly Cidr[];
  resolve?: ResolveHost;
  connectTimeoutMs: number;
};

export function createGuardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const base = buildConnector({ timeout: options.connectTimeoutMs });
  return (connectOptions, callback) => {
    const literal = ipLiteralHost(connectOptions.hostname);
    if (literal !== undefined) {
      if (isAddressAllowed(literal, options.allowed)) base(connectOptions, callback);
      else callback(new SsrfBlockedError(connectOptions.hostname), null);
      return;
    }
    resolveAllowedAddresses(connectOptions.hostname, options.allowed, options.resolve).then(
      (addresses) => connectInOrder(base, connectOptions, addresses.slice(0, MAX_ADDRESS_ATTEMPTS), callback),
      (error: Error) => callback(error, null),
    );
  };
}

/** Tries each validated address in turn (IPv6 then IPv4, say); reports the last error. */
function connectInOrder(
  base: buildConnector.connector,
  connectOptions: buildConnector.Options,
  addresses: ResolvedAddress[],
  callback: buildConnector.Callback,
): void {
  const [first, ...rest] = addresses;
  if (first === undefined) return;
  // `host` keeps the name, so TLS SNI and certificate checks use it.
  base({ ...connectOptions, hostname: first.address }, (...args) => {
    const [error] = args;
    if (error && rest.length > 0) connectInOrder(base, connectOptions, rest, callback);
    else callback(...args);
  });
}

/** The unguarded connector for operator-trusted targets (env hooks, APP_URL, QSTASH_URL). */
export function createTrustedConnector(connectTimeoutMs: number): buildConnector.connector {
  return buildConnector({ timeout: connectTimeoutMs });
}
