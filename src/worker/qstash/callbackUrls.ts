/**
 * Q7: the callback URLs given to QStash for one publish. The delivery id and generation ride in
 * the query string, so a verified callback names its ledger row (and a stale generation is
 * ignored). QStash signs the exact URL (JWT `sub`), so the server rebuilds it the same way.
 */
export const QSTASH_CALLBACK_PATH = '/qstash/callback';
export const QSTASH_FAILURE_PATH = '/qstash/failure';

export function publicBase(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '');
}

export function qstashCallbackUrls(publicUrl: string, deliveryId: string, generation: number): { callback: string; failure: string } {
  const query = `?deliveryId=${encodeURIComponent(deliveryId)}&generation=${generation}`;
  const base = publicBase(publicUrl);
  return { callback: `${base}${QSTASH_CALLBACK_PATH}${query}`, failure: `${base}${QSTASH_FAILURE_PATH}${query}` };
}
