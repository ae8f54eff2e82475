/**
 * @upstash/qstash is an optional peer, loaded only when configured (~10 MB of RSS otherwise
 * unused): configured without it, the worker stops with what to install.
 */
import { SettingsError } from '../contract/errors.ts';
import type { Settings } from '../config/settings.ts';
import { isMissingPackage, QSTASH_PACKAGE } from '../notify/lazyQStashPublisher.ts';
import type { QStashPublisher } from '../send/types.ts';
import { withDefined } from '../util/withDefined.ts';

/** Loads a module that needs @upstash/qstash, which `variable` being set asks for. */
export async function importQStash<M>(load: () => Promise<M>, variable: string): Promise<M> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error))
      throw new SettingsError([variable], `${variable} is set, which needs the optional package ${QSTASH_PACKAGE}: npm install ${QSTASH_PACKAGE}`);
    throw error;
  }
}

/**
 * The publisher when QSTASH_TOKEN is set; without one, a 'qstash' hook is treated exactly like a
 * missing token: one direct fetch (D7).
 */
export async function loadQStashPublisher(settings: Settings, retries: number | undefined): Promise<QStashPublisher | undefined> {
  if (!settings.QSTASH_TOKEN?.trim()) return undefined;
  const { createQStashPublisher } = await importQStash(() => import('../notify/qstashTransport.ts'), 'QSTASH_TOKEN');
  return createQStashPublisher({
    url: settings.QSTASH_URL,
    token: settings.QSTASH_TOKEN,
    ...withDefined({ retries }),
  });
}
