/**
 * SEC-T5 (I1): a deny reason or message carrying `\u0000` (an interceptor's
 * text, which hookrelay does not control) is sanitised before the record is written: the `input`
 * record is stored (it was lost: the sink's INSERT failed, `sinkFailures` 1), the deny still holds.
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { interceptionRecords } from '../../../src/store/schema.ts';
import { createStoreRecordSink } from '../../../src/store/interceptionRecordSink.ts';
import { AgentContextBuilder, InterceptionEmitter, Verdict, ALLOW } from '../../../src/intercept/index.ts';
import { createTestStore, type TestStore } from '../../support/db.ts';

let t: TestStore;
beforeAll(async () => {
  t = await createTestStore('sec_t5_rec');
});
afterAll(async () => {
  await t?.cleanup();
});

describe('SEC-T5 interception records with unstorable reasons', () => {
  it('SEC-T5 I1 a deny reason and message with \\u0000: the input record is stored (U+FFFD), sinkFailures 0, the deny holds', async () => {
    const sink = createStoreRecordSink(t.store.db);
    const e = new InterceptionEmitter({
      interceptors: [(ctx) => (ctx.interception_point === 'input' ? Verdict.deny('policy\u0000violation', 'message \u0000 text') : ALLOW)],
      recordSink: sink.sink,
      sequenceProvider: sink.sequenceProvider,
    });
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-nul' });
    await e.emit(b.agentStartup({ toolsRegistered: [] }));
    await expect(e.emit(b.input({ content: 'hello', role: 'user' }))).rejects.toThrow(/input blocked: deny/);
    expect(e.sinkFailures).toBe(0);
    const rows = await t.store.db
      .select()
      .from(interceptionRecords)
      .where(eq(interceptionRecords.sessionId, 'sess-nul'))
      .orderBy(asc(interceptionRecords.sequence));
    expect(rows.map((r) => r.point)).toEqual(['agent_startup', 'input']);
    const stored = JSON.stringify(rows[1]!.record);
    expect(stored).toContain('policy\ufffdviolation');
    expect(stored).not.toContain('\\u0000');
    expect(stored).toContain('message \ufffd text');
    expect(e.records.at(-1)?.verdict).toMatchObject({ decision: 'deny' });
  });
});
