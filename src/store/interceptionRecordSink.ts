import { eq, max } from 'drizzle-orm';
import type { InterceptionRecord } from '../contract/agentHooks.ts';
import type { RecordSink, SequenceProvider } from '../intercept/index.ts';
import { dbOf, type Db } from './db.ts';
import type { StoreDb } from './types.ts';
import { interceptionRecords } from './schema.ts';

export type StoreRecordSink = {
  /** Persists each payload-free record; a duplicate (session_id, sequence) rejects (the emitter counts it). */
  sink: RecordSink;
  /** Hands out the session's next sequence, resuming after the highest stored one (I4). */
  sequenceProvider: SequenceProvider;
  nextSequence(sessionId: string): Promise<number>;
  /** Highest persisted sequence of a session, or null when it has none. */
  highestSequence(sessionId: string): Promise<number | null>;
};

/**
 * Store-backed record stream for the interception emitter. Records land in
 * `interception_records` (unique per session and sequence), and sequences
 * resume after the highest stored one, so an emitter restarted for the same
 * session keeps its records strictly increasing instead of starting over at 0.
 * One writer per session is assumed; a concurrent second writer is caught by
 * the unique index, never silently interleaved.
 */
export function createStoreRecordSink(storeDb: StoreDb): StoreRecordSink {
  const db: Db = dbOf(storeDb);
  // Per session: the next number, loaded once from the store. Increments happen
  // synchronously after the load resolves, so concurrent callers never share one.
  const counters = new Map<string, Promise<{ next: number }>>();

  async function highestSequence(sessionId: string): Promise<number | null> {
    const rows = await db
      .select({ highest: max(interceptionRecords.sequence) })
      .from(interceptionRecords)
      .where(eq(interceptionRecords.sessionId, sessionId));
    return rows[0]?.highest ?? null;
  }

  async function nextSequence(sessionId: string): Promise<number> {
    let state = counters.get(sessionId);
    if (state === undefined) {
      state = highestSequence(sessionId).then((h) => ({ next: h === null ? 0 : h + 1 }));
      counters.set(sessionId, state);
      state.catch(() => counters.delete(sessionId)); // retry the load next time
    }
    const s = await state;
    return s.next++;
  }

  async function sink(record: InterceptionRecord): Promise<void> {
    await db.insert(interceptionRecords).values({
      sessionId: record.session_id,
      sequence: record.sequence,
      point: record.interception_point,
      record,
    });
  }

  return { sink, sequenceProvider: { next: nextSequence }, nextSequence, highestSequence };
}
