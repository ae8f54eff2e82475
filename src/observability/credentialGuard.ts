/**
 * Judges one presented credential (the console token at the sign-in form, or as a bearer) under
 * the guess throttle (authThrottle.ts), and logs each refusal once per burst per client address
 * (refusals for all addresses together, once for all): the first line at once, the rest counted
 * into one line a minute later. The address is logged, the presented value never.
 */
import type { IncomingMessage } from 'node:http';
import { createAuthThrottle, throttleKey, type AuthThrottle, type CredentialKind } from './authThrottle.ts';
import { createLogLimiter } from './logLimiter.ts';
import type { Logger } from './logger.ts';

type CredentialVerdict = { ok: true } | { ok: false; status: 401 } | { ok: false; status: 429; retryAfterSeconds: number };

export type CredentialGuard = {
  /**
   * Waits for this attempt's turn (or refuses it, 429, without running `check`), then runs
   * `check`: true accepts. A `check` that throws (a form that could not be read) is no guess:
   * its count is undone, nothing is logged, and its error is rethrown.
   */
  judge(kind: CredentialKind, req: IncomingMessage, check: () => boolean | Promise<boolean>): Promise<CredentialVerdict>;
};

/** A burst: failures from one address within this window share one summary line. */
const LOG_WINDOW_MS = 60_000;

const WHAT: Readonly<Record<CredentialKind, string>> = { signin: 'console sign-in', bearer: 'bearer token' };

export function createCredentialGuard(p: { logger: Logger; throttle?: AuthThrottle }): CredentialGuard {
  const throttle = p.throttle ?? createAuthThrottle();
  const limit = createLogLimiter({ windowMs: LOG_WINDOW_MS });
  return {
    async judge(kind, req, check) {
      const address = req.socket.remoteAddress;
      const key = throttleKey(address);
      const turn = await throttle.admit(kind, address);
      if (!turn.ok) {
        // Refused for all addresses together: one line for all of them (a guesser spread over many addresses would otherwise write one each).
        limit(`${kind}:throttled:${turn.scope === 'global' ? '*' : key}`, (repeats) =>
          p.logger.warn(
            {
              via: kind,
              scope: turn.scope,
              retryAfterSeconds: turn.retryAfterSeconds,
              ...(turn.scope === 'address' ? { address } : {}),
              ...(repeats > 0 ? { refusedSince: repeats } : {}),
            },
            repeats > 0
              ? `${WHAT[kind]}: ${repeats} more attempts refused unchecked in the last minute (too many wrong tokens)`
              : `${WHAT[kind]}: too many wrong tokens ${turn.scope === 'address' ? 'from this address' : 'from all addresses together'}; further attempts are refused unchecked for ${turn.retryAfterSeconds} s`,
          ),
        );
        return { ok: false, status: 429, retryAfterSeconds: turn.retryAfterSeconds };
      }
      let accepted: boolean;
      try {
        accepted = await check();
      } catch (error) {
        turn.settle('unjudged');
        throw error;
      }
      turn.settle(accepted ? 'right' : 'wrong');
      if (accepted) return { ok: true };
      limit(`${kind}:wrong:${key}`, (repeats) =>
        p.logger.warn(
          repeats > 0 ? { via: kind, address, failures: repeats } : { via: kind, address, attempts: turn.attempts, waitedMs: turn.waitedMs },
          repeats > 0 ? `${WHAT[kind]}: ${repeats} more wrong tokens from this address in the last minute` : `${WHAT[kind]}: wrong token`,
        ),
      );
      return { ok: false, status: 401 };
    },
  };
}
