import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { interceptionRecords } from '../../src/store/schema.ts';
import { createStoreRecordSink } from '../../src/store/interceptionRecordSink.ts';
import { AgentContextBuilder, InterceptionEmitter, Verdict, ALLOW } from '../../src/intercept/index.ts';
import { createTestStore, type TestStore } from '../support/db.ts';

let t: TestStore;

beforeAll(async () => {
  t = await createTestStore('t');
});

afterAll(async () => {
  await t?.cleanup();
});

function emitterFor(sessionSink: ReturnType<typeof createStoreRecordSink>): InterceptionEmitter {
  return new InterceptionEmitter({
    interceptors: [(ctx) => (ctx.interception_point === 'output' ? Verdict.transform('$target.content', 'SECRET-REWRITE') : ALLOW)],
    recordSink: sessionSink.sink,
    sequenceProvider: sessionSink.sequenceProvider,
  });
}

async function rowsOf(sessionId: string) {
  return t.store.db.select().from(interceptionRecords).where(eq(interceptionRecords.sessionId, sessionId)).orderBy(asc(interceptionRecords.sequence));
}

describe('I1/I4: store-backed interception record sink', () => {
  it('I1: persists one payload-free record per emission, keyed by (session_id, sequence)', async () => {
    const store = createStoreRecordSink(t.store.db);
    const e = emitterFor(store);
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-a' });
    await e.emit(b.agentStartup({ toolsRegistered: [] }));
    await e.emit(b.input({ content: 'my SECRET-INPUT', role: 'user' }));
    await e.emit(b.output({ content: 'SECRET-OUTPUT' }));
    const rows = await rowsOf('sess-a');
    expect(rows.map((r) => [r.sequence, r.point])).toEqual([
      [0, 'agent_startup'],
      [1, 'input'],
      [2, 'output'],
    ]);
    expect(rows[2].record).toMatchObject({ session_id: 'sess-a', sequence: 2, verdict: { decision: 'transform', transform: { path: '$target.content' } } });
    expect(JSON.stringify(rows.map((r) => r.record))).not.toContain('SECRET');
    expect(e.sinkFailures).toBe(0);
  });

  it('I4: a restarted emitter resumes after the highest stored sequence of the session', async () => {
    const first = emitterFor(createStoreRecordSink(t.store.db));
    const b1 = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-restart' });
    await first.emit(b1.agentStartup({ toolsRegistered: [] }));
    await first.emit(b1.input({ content: 'x', role: 'user' }));

    // "Restart": new sink, new emitter, new builder that would start at 0 again.
    const store = createStoreRecordSink(t.store.db);
    expect(await store.highestSequence('sess-restart')).toBe(1);
    const second = emitterFor(store);
    const b2 = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-restart' });
    const ctx = b2.input({ content: 'y', role: 'user' });
    await second.emit(ctx);
    expect(ctx.sequence).toBe(2);
    expect((await rowsOf('sess-restart')).map((r) => r.sequence)).toEqual([0, 1, 2]);
    expect(second.sinkFailures).toBe(0);
  });

  it('I4: concurrent emissions after a restart stay unique and strictly increasing', async () => {
    const store = createStoreRecordSink(t.store.db);
    const e = emitterFor(store);
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-restart' });
    await Promise.all(Array.from({ length: 20 }, (_, i) => e.emit(b.preToolCall({ id: `tc-${i}`, name: 't', args: { i } }))));
    expect((await rowsOf('sess-restart')).map((r) => r.sequence)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(await createStoreRecordSink(t.store.db).nextSequence('sess-new')).toBe(0);
  });

  it('I1: a duplicate (session_id, sequence) is refused by the store and counted, never changing control flow', async () => {
    const store = createStoreRecordSink(t.store.db);
    const e = new InterceptionEmitter({ interceptors: [() => ALLOW], recordSink: store.sink }); // builder-assigned sequences
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'it', sessionId: 'sess-a' }); // 0 already stored
    await expect(e.emit(b.agentStartup({ toolsRegistered: [] }))).resolves.toEqual({ tools_registered: [] });
    expect(e.sinkFailures).toBe(1);
    expect((await rowsOf('sess-a')).length).toBe(3);
  });
});
