import { createLogger } from '../observability/logger.ts';
import { onStopSignals } from '../observability/stopSignals.ts';
import { loadSettings } from '../config/settings.ts';
import { startOtelSdkFromEnv } from './otelSdk.ts';
import { startDeliveryWorker, type StartDeliveryWorkerOptions } from './startDeliveryWorker.ts';

/**
 * Run the worker until SIGINT/SIGTERM, then stop (Q9): resolves true when the stop was clean
 * (every in-flight delivery finished and its outcome written), false when some were cut off at
 * the bound (their rows are the reconciler's); the CLI exits 0 or 1 accordingly. Repeated
 * signals are ignored while it stops: the copy npm forwards of one Ctrl-C silently (debug), a
 * later one with a line. With
 * OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_TRACES_EXPORTER set, the OpenTelemetry SDK starts first
 * (so the worker's spans are exported) and is flushed last.
 */
export async function runDeliveryWorkerUntilSignal(options: StartDeliveryWorkerOptions = {}): Promise<boolean> {
  const env = options.env ?? process.env;
  // Read once: the same settings choose the log level and start the worker.
  const settings = options.settings ?? loadSettings(env);
  const logger = options.logger ?? createLogger({ level: settings.LOG_LEVEL });
  const otel = await startOtelSdkFromEnv(env, logger);
  let signals: ReturnType<typeof onStopSignals> | undefined;
  try {
    const running = await startDeliveryWorker({ ...options, settings, logger });
    // One Ctrl-C under `npm start` arrives twice (the terminal's and npm's): that echo is debug, a real second signal is said.
    signals = onStopSignals(({ signal, echo }) =>
      echo ? logger.debug({ signal }, 'signal repeated by the parent process; ignored') : logger.info({ signal }, 'already stopping; signal ignored'),
    );
    const signal = await signals.first;
    logger.info({ signal }, 'stopping');
    return await running.stop();
  } finally {
    await otel?.shutdown();
    signals?.dispose();
  }
}
