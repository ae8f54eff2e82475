/**
 * `hookrelay worker` / `start` turn OpenTelemetry on when the standard variables ask for it
 * (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER, and
 * not OTEL_SDK_DISABLED=true). The SDK is the optional package @opentelemetry/sdk-node, which
 * reads every other OTEL_* variable itself (protocol, headers, sampler, resource attributes);
 * hookrelay only defaults the service name and keeps its own metrics and logs on Prometheus and
 * pino (OTEL_METRICS_EXPORTER / OTEL_LOGS_EXPORTER default to `none` unless you set them).
 * The library never loads it: an application registers its own SDK.
 */
import { SettingsError } from '../contract/errors.ts';
import type { Logger } from '../observability/logger.ts';

const OTEL_SDK_PACKAGE = '@opentelemetry/sdk-node';
const DEFAULT_OTEL_SERVICE_NAME = 'hookrelay-worker';

/** The OTEL_* variables hookrelay itself reads or defaults (the SDK reads the rest of the standard set). */
export const OTEL_WORKER_VARIABLES = [
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_SERVICE_NAME',
  'OTEL_METRICS_EXPORTER',
  'OTEL_LOGS_EXPORTER',
] as const;

export type RunningOtelSdk = { shutdown(): Promise<void> };

/** True when the environment asks for traces to be exported. */
export function otelRequested(env: NodeJS.ProcessEnv): boolean {
  if (/^true$/i.test(env.OTEL_SDK_DISABLED ?? '')) return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter !== undefined && exporter !== '') return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Starts the SDK when asked (undefined otherwise); a missing package is a SettingsError saying what to install. */
export async function startOtelSdkFromEnv(env: NodeJS.ProcessEnv, logger: Logger): Promise<RunningOtelSdk | undefined> {
  if (!otelRequested(env)) return undefined;
  let mod: typeof import('@opentelemetry/sdk-node');
  try {
    mod = await import('@opentelemetry/sdk-node');
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' && error instanceof Error && error.message.includes(OTEL_SDK_PACKAGE)) {
      const variable = env.OTEL_TRACES_EXPORTER ? 'OTEL_TRACES_EXPORTER' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
      throw new SettingsError([variable], `${variable} is set, which needs the optional package ${OTEL_SDK_PACKAGE}: npm install ${OTEL_SDK_PACKAGE}`);
    }
    throw error;
  }
  // The SDK reads these from process.env when it starts.
  process.env.OTEL_SERVICE_NAME ??= env.OTEL_SERVICE_NAME ?? DEFAULT_OTEL_SERVICE_NAME;
  process.env.OTEL_METRICS_EXPORTER ??= env.OTEL_METRICS_EXPORTER ?? 'none';
  process.env.OTEL_LOGS_EXPORTER ??= env.OTEL_LOGS_EXPORTER ?? 'none';
  const sdk = new mod.NodeSDK({ instrumentations: [] });
  sdk.start();
  logger.info(
    {
      service: process.env.OTEL_SERVICE_NAME,
      exporter: env.OTEL_TRACES_EXPORTER ?? 'otlp',
      endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? null,
    },
    'OpenTelemetry tracing on',
  );
  return {
    async shutdown() {
      await sdk.shutdown().catch((err: unknown) => logger.warn({ err }, 'OpenTelemetry SDK did not shut down cleanly (spans may be lost)'));
    },
  };
}
