import { createLogger } from '../observability/logger.ts';
import { loadSettings } from '../config/settings.ts';
import { startOtelSdkFromEnv } from './otelSdk.ts';
import { startDeliveryWorker, type StartDeliveryWorkerOptions } from './startDeliveryWorker.ts';

/**
 * Run the worker until SIGINT/SIGTERM, then stop cleanly (Q9); the caller exits 0. With
 * OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_TRACES_EXPORTER set, the OpenTelemetry SDK starts first
 * (so the worker's spans are exported) and is flushed last.
 */
export async function runDeliveryWorkerUntilSignal(options: StartDeliveryWorkerOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? createLogger({ level: (options.settings ?? loadSettings(env)).LOG_LEVEL });
  const otel = await startOtelSdkFromEnv(env, logger);
  try {
    const running = await startDeliveryWorker({ ...options, logger });
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await running.stop();
  } finally {
    await otel?.shutdown();
  }
}
