/**
 * A QStash publisher that loads `@upstash/qstash` (an optional peer dependency) at its first
 * publish, so a process that never publishes to QStash never loads — or needs — the SDK. When
 * the package is not installed, every publish is a `configuration` failure (logged once, naming
 * the package): D7 then falls back to one direct fetch, or fails critically with `fallback: 'none'`.
 */
import type { QStashPublisherOptions } from './qstashTransport.ts';
import type { QStashPublisher, QStashPublishResult } from '../send/types.ts';

export const QSTASH_PACKAGE = '@upstash/qstash';

export function createLazyQStashPublisher(options: QStashPublisherOptions, onMissing?: (message: string) => void): QStashPublisher {
  let loaded: Promise<QStashPublisher | undefined> | undefined;
  const load = () =>
    (loaded ??= import('./qstashTransport.ts').then(
      (m) => m.createQStashPublisher(options),
      (error: unknown) => {
        if (!isMissingPackage(error)) throw error;
        onMissing?.(`QStash delivery needs the optional package ${QSTASH_PACKAGE}: npm install ${QSTASH_PACKAGE}`);
        return undefined;
      },
    ));
  return {
    async publish(req): Promise<QStashPublishResult> {
      const publisher = await load();
      return publisher ? publisher.publish(req) : { ok: false, errorClass: 'configuration' };
    },
  };
}

/** ERR_MODULE_NOT_FOUND for the SDK itself (not for a module the SDK failed to load). */
export function isMissingPackage(error: unknown, name = QSTASH_PACKAGE): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return code === 'ERR_MODULE_NOT_FOUND' && message.includes(`'${name}'`);
}
