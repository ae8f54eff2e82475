import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger };

/**
 * Paths pino censors wherever they appear: authorization headers, tokens, signing secrets and
 * any resolved header map. Templates are logged unresolved; resolved values never are (W2).
 */
export const REDACT_PATHS = [
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
  'AGENT_HOOK_WEBHOOK_TOKEN',
];

export type CreateLoggerOptions = { level?: string; name?: string; pretty?: boolean; destination?: DestinationStream };

/** pino with redaction built in; human-readable on a TTY (pino-pretty), JSON lines otherwise. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const base: LoggerOptions = {
    name: options.name ?? 'hookrelay',
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (options.destination) return pino(base, options.destination);
  const pretty = options.pretty ?? Boolean(process.stdout.isTTY);
  if (pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } });
  }
  return pino(base);
}

/** A logger that drops everything: the library default, so importing code never writes output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
