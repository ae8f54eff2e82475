import { pino, stdSerializers, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { carriesQueryParameters, toStorageError } from '../contract/storageError.ts';
import { createLogLimiter } from './logLimiter.ts';

export type { Logger };

/**
 * Paths pino censors wherever they appear: authorization headers, tokens, signing secrets and
 * any resolved header map. Templates are logged unresolved; resolved values never are (W2).
 */
const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'resolvedHeaders',
  '*.resolvedHeaders',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'signingSecrets',
  '*.signingSecrets',
  'password',
  '*.password',
  'QSTASH_TOKEN',
  'QSTASH_CURRENT_SIGNING_KEY',
  'QSTASH_NEXT_SIGNING_KEY',
  'HOOKRELAY_SIGNING_SECRETS',
  'HOOKRELAY_CONSOLE_TOKEN',
  'AGENT_HOOK_WEBHOOK_TOKEN',
];

export type CreateLoggerOptions = { level?: string; name?: string; pretty?: boolean; destination?: DestinationStream };

/** pino with redaction built in; human-readable on a TTY (pino-pretty), JSON lines otherwise. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const base: LoggerOptions = {
    name: options.name ?? 'hookrelay',
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: safeErrorSerializer },
  };
  if (options.destination) return pino(base, options.destination);
  const pretty = options.pretty ?? Boolean(process.stdout.isTTY);
  if (pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } });
  }
  return pino(base);
}

/**
 * pino's error serializer, except that a store error carrying drizzle's "Failed query … params"
 * (anywhere in its cause chain) is logged as a StorageError: a batched statement's parameters are
 * other callers' payloads and must never reach a log line.
 */
export function safeErrorSerializer(err: unknown): unknown {
  return stdSerializers.err((carriesQueryParameters(err) ? toStorageError(err, 'a store call') : err) as Error);
}

/** A logger that drops everything: the library default, so importing code never writes output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * One log line per kind of failure per window instead of one per occurrence: a client that
 * reconnects every few hundred ms while Redis is down would otherwise fill the log (44 lines in
 * 12 s). The first occurrence is logged with its error (stack included); repeats within
 * `windowMs` are counted and reported in one line when the window ends (logLimiter.ts).
 */
export function throttledErrorLog(logger: Pick<Logger, 'warn'>, message: string, windowMs = 30_000): (err: Error) => void {
  const limit = createLogLimiter({ windowMs, maxKeys: 100 });
  return (err) => limit(`${err.name}:${err.message}`, (repeats) => logger.warn({ err, ...(repeats > 0 ? { repeatedSinceLastLog: repeats } : {}) }, message));
}
