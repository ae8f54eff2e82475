/**
 * F1: a spool segment (spool.ts) drained into the ledger, in order, with the same delivery ids.
 * Idempotent, so a crash anywhere in a drain costs nothing: each chunk of calls is one transaction
 * that inserts its rows `ON CONFLICT DO NOTHING` (a row a previous drain, or the late commit of a
 * call that timed out, already stored is left as it is) and numbers only the rows it inserted
 * (SEC-H7); jobs are added only for those (a job without attempt data: the worker reads the row),
 * or left to the reconciler when Redis is away. A drain that stopped part-way (the store went away
 * again, the process died) starts the segment over next time. A call the ledger refuses for its
 * data (it passed every check at enqueue, so this is rare) is set aside in `rejected.jsonl` beside
 * the segments, with an error line — never retried forever, never dropped silently.
 */
import { appendFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { storageCall } from '../contract/storageError.ts';
import type { Logger } from '../observability/logger.ts';
import type { Db } from '../store/db.ts';
import { insertDeliveries } from '../store/deliveriesRepo.ts';
import { assignSequences } from '../store/orderingRepo.ts';
import { decodeSpoolSegment, type SpooledRow } from './spoolFormat.ts';
import { isStoreUnusable } from './storeAvailability.ts';

/** Rows per drain transaction (whole calls: a call's rows are never split). */
const DRAIN_CHUNK_ROWS = 500;
/** Where calls the ledger refused are set aside, beside the segments. */
export const SPOOL_REJECTED_FILE = 'rejected.jsonl';

export type DrainDeps = {
  db: Db;
  /** Adds the jobs of rows the drain inserted (never throws: the reconciler adds what it could not). */
  addJobs(ids: readonly string[]): Promise<void>;
  logger: Logger;
};

export type DrainResult = { events: number; inserted: number; rejected: number };

/** Drains one segment; throws when the store is away (the caller retries it whole later). */
export async function drainSpoolSegment(deps: DrainDeps, segment: string): Promise<DrainResult> {
  const decoded = decodeSpoolSegment(await readFile(segment));
  const result: DrainResult = { events: decoded.records.length, inserted: 0, rejected: 0 };
  for (const corrupt of decoded.corrupt) {
    await setAside(segment, { line: corrupt.line, reason: 'corrupt line (checksum or format)', raw: corrupt.bytes.toString('base64') });
    result.rejected += 1;
  }
  if (decoded.corrupt.length > 0)
    deps.logger.error({ segment, lines: decoded.corrupt.map((c) => c.line) }, `spool: unreadable lines set aside in ${SPOOL_REJECTED_FILE}, not stored`);
  for (const chunk of chunks(decoded.records)) {
    let ids: string[];
    try {
      ids = await storeSpooled(deps.db, chunk.flat());
    } catch (error) {
      if (isStoreUnusable(error) || chunk.length === 1) {
        if (isStoreUnusable(error)) throw error;
        await refuse(deps, segment, chunk[0]!, error);
        result.rejected += 1;
        continue;
      }
      // One call's data refused the chunk: each call alone, so only that one is set aside.
      ids = [];
      for (const rows of chunk) {
        try {
          ids.push(...(await storeSpooled(deps.db, rows)));
        } catch (callError) {
          if (isStoreUnusable(callError)) throw callError;
          await refuse(deps, segment, rows, callError);
          result.rejected += 1;
        }
      }
    }
    result.inserted += ids.length;
    await deps.addJobs(ids);
  }
  return result;
}

/** One transaction: the rows inserted (those already stored are skipped), the ordered ones among them numbered in spool order. */
async function storeSpooled(db: Db, rows: readonly SpooledRow[]): Promise<string[]> {
  return storageCall('insert spooled deliveries', () =>
    db.transaction(async (tx) => {
      const ids = await insertDeliveries(tx as unknown as Db, rows);
      const inserted = new Set(ids);
      const toNumber = rows.filter((r) => r.ordered && inserted.has(r.id)).map((r) => ({ id: r.id, operationId: r.operationId, hookId: r.hookId }));
      await assignSequences(tx as unknown as Db, toNumber);
      return ids;
    }),
  );
}

/** Whole calls, up to DRAIN_CHUNK_ROWS rows a chunk (a bigger call is a chunk of its own). */
function* chunks(records: readonly SpooledRow[][]): Generator<SpooledRow[][]> {
  let chunk: SpooledRow[][] = [];
  let rows = 0;
  for (const record of records) {
    if (chunk.length > 0 && rows + record.length > DRAIN_CHUNK_ROWS) {
      yield chunk;
      chunk = [];
      rows = 0;
    }
    chunk.push(record);
    rows += record.length;
  }
  if (chunk.length > 0) yield chunk;
}

async function refuse(deps: DrainDeps, segment: string, rows: readonly SpooledRow[], error: unknown): Promise<void> {
  await setAside(segment, { reason: error instanceof Error ? error.message : 'refused by the ledger', rows });
  deps.logger.error(
    { segment, deliveryIds: rows.map((r) => r.id), err: error },
    `spool: the ledger refused a spooled call; set aside in ${SPOOL_REJECTED_FILE} (not stored)`,
  );
}

async function setAside(segment: string, entry: Record<string, unknown>): Promise<void> {
  const line = `${JSON.stringify({ at: new Date().toISOString(), segment: path.basename(segment), ...entry })}\n`;
  await appendFile(path.join(path.dirname(segment), SPOOL_REJECTED_FILE), line, { mode: 0o600 });
}
