/** Reads of the payload-free interception records (`hookrelay records list`); the emitter writes them through interceptionRecordSink.ts. */
import { desc, eq } from 'drizzle-orm';
import type { Db } from './db.ts';
import { interceptionRecords } from './schema.ts';

export type StoredInterceptionRecord = typeof interceptionRecords.$inferSelect;

/** Newest first (by id), of one session when `sessionId` is given, at most `limit`. */
export async function listInterceptionRecords(db: Db, options: { sessionId?: string; limit: number }): Promise<StoredInterceptionRecord[]> {
  return db
    .select()
    .from(interceptionRecords)
    .where(options.sessionId ? eq(interceptionRecords.sessionId, options.sessionId) : undefined)
    .orderBy(desc(interceptionRecords.id))
    .limit(options.limit);
}
