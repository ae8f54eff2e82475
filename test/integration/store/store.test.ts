import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/db.ts';
import { MIGRATIONS_FOLDER, migrateStore } from '../../../src/store/migrate.ts';
import {
  appendOperationHooks,
  finishOperation,
  flagCriticalDeliveryFailure,
  getOperation,
  insertOperation,
  loadOperationHooks,
} from '../../../src/store/operationsRepo.ts';
import { claimPlaceholderApproval, getPlaceholder, insertPlaceholder, publishPlaceholderOnce } from '../../../src/store/placeholdersRepo.ts';
import { getDelivery, insertDeliveries, listDeliveries, matchIdempotentDeliveries, newDeliveryId } from '../../../src/store/deliveriesRepo.ts';
import { createTestSchema, createTestStore, type TestStore } from '../../support/db.ts';

const hook = {
  id: 'notify',
  type: 'onComplete',
  webhook: { url: 'https://example.com/h', headers: { authorization: 'Bearer ${TOKEN}' }, allowedEnvVars: ['TOKEN'] },
};

describe('store on Postgres', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore('store');
  });
  afterAll(async () => {
    await t.cleanup();
  });

  it('applies the migrations on an empty schema, and again without change (idempotent)', async () => {
    const fresh = await createTestSchema('mig');
    const store = await openStore({ databaseUrl: fresh.url });
    try {
      await migrateStore(store, { migrationsSchema: fresh.schema });
      await migrateStore(store, { migrationsSchema: fresh.schema });
      const tables = await store.pool!.query<{ table_name: string }>(
        'select table_name from information_schema.tables where table_schema = $1 order by table_name',
        [fresh.schema],
      );
      const names = tables.rows.map((r) => r.table_name);
      expect(names).toEqual([
        '__drizzle_migrations',
        'approvals',
        'deferred_placeholders',
        'deliveries',
        'delivery_sequences',
        'endpoints',
        'interception_records',
        'operation_hooks',
        'operations',
      ]);
      const applied = await store.pool!.query<{ n: number }>(`select count(*)::int as n from "${fresh.schema}".__drizzle_migrations`);
      const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
      expect(journal.entries.length).toBeGreaterThanOrEqual(2);
      expect(applied.rows[0]?.n).toBe(journal.entries.length);
    } finally {
      await store.close();
      await fresh.drop();
    }
  });

  it('operations: create, finish, flag; hooks appended in order with templates unresolved', async () => {
    const db = t.store.db;
    await insertOperation(db, { id: 'op-1', parentOperationId: 'op-0', userId: 'u1' });
    await insertOperation(db, { id: 'op-1', userId: 'other' }); // a retried create changes nothing
    expect(await getOperation(db, 'op-1')).toMatchObject({ id: 'op-1', parentOperationId: 'op-0', userId: 'u1', status: 'running' });
    await appendOperationHooks(db, 'op-1', [hook]);
    await appendOperationHooks(db, 'op-1', [{ ...hook, id: 'second' }]);
    const stored = await loadOperationHooks(db, 'op-1');
    expect(stored?.map((h) => (h as { id: string }).id)).toEqual(['notify', 'second']);
    expect(JSON.stringify(stored)).toContain('Bearer ${TOKEN}');
    expect(await loadOperationHooks(db, 'op-none')).toBeUndefined();
    await finishOperation(db, 'op-1', 'completed', 'done');
    await flagCriticalDeliveryFailure(db, 'op-1');
    await flagCriticalDeliveryFailure(db, 'op-missing');
    expect(await getOperation(db, 'op-1')).toMatchObject({ status: 'completed', completionReason: 'done', criticalDeliveryFailure: true });
    expect(await getOperation(db, 'op-missing')).toMatchObject({ criticalDeliveryFailure: true });
  });

  it('P2: the placeholder single write under 20 concurrent writers: exactly one applied, all see the stored result', async () => {
    const db = t.store.db;
    await insertPlaceholder(db, 'op-p', 'call-1');
    const writers = Array.from({ length: 20 }, (_, i) =>
      publishPlaceholderOnce(db, { operationId: 'op-p', toolCallId: 'call-1', result: { content: `r${i}`, success: true } }),
    );
    const results = await Promise.all(writers);
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    const winner = results.find((r) => r.applied)!.result;
    for (const r of results) expect(r.result).toEqual(winner);
    expect((await getPlaceholder(db, 'op-p', 'call-1'))?.result).toEqual(winner);
  });

  it('P3: an approval claim is private and first-wins; it publishes nothing', async () => {
    const db = t.store.db;
    await insertPlaceholder(db, 'op-a', 'call-1');
    expect(await claimPlaceholderApproval(db, { operationId: 'op-a', toolCallId: 'call-1', decision: { action: 'approve' } })).toEqual({
      applied: true,
      approval: { action: 'approve' },
    });
    const second = await claimPlaceholderApproval(db, { operationId: 'op-a', toolCallId: 'call-1', decision: { action: 'reject' } });
    expect(second).toEqual({ applied: false, approval: { action: 'approve' } });
    expect((await getPlaceholder(db, 'op-a', 'call-1'))?.result).toBeNull();
  });

  it('Q1/Q1a: deliveries: dlv_ ids, multi-row insert, idempotency key per (operation, hook, key), filters', async () => {
    const db = t.store.db;
    const id = newDeliveryId();
    expect(id).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    const now = new Date();
    const rows = ['h1', 'h2'].map((hookId) => ({
      id: newDeliveryId(),
      operationId: 'op-d',
      eventType: 'onComplete' as const,
      hookId,
      hook,
      transport: 'fetch' as const,
      payload: { operationId: 'op-d' },
      idempotencyKey: 'key-1',
      occurredAt: now,
    }));
    expect(await insertDeliveries(db, rows)).toHaveLength(2);
    const again = rows.map((r) => ({ ...r, id: newDeliveryId() }));
    expect(await insertDeliveries(db, again)).toEqual([]);
    // Q1a: the stored row of each (operation, hook, key), and whether it is the same delivery.
    const matched = await matchIdempotentDeliveries(db, [...again, { ...again[0]!, id: newDeliveryId(), payload: { operationId: 'op-d', other: 1 } }]);
    expect(again.map((r) => matched.get(r.id))).toEqual(rows.map((r) => ({ id: r.id, same: true })));
    expect([...matched.values()].filter((m) => !m.same)).toEqual([{ id: rows[0]!.id, same: false }]);
    // Another operation never meets the key.
    expect(await insertDeliveries(db, [{ ...rows[0]!, id: newDeliveryId(), operationId: 'op-other' }])).toHaveLength(1);
    const got = await getDelivery(db, rows[0]!.id);
    expect(got).toMatchObject({ status: 'queued', attemptCount: 0, generation: 0, attempts: [], hookId: 'h1' });
    expect((await listDeliveries(db, { operationId: 'op-d', hookId: 'h2' })).map((d) => d.id)).toEqual([rows[1]!.id]);
    expect(await listDeliveries(db, { status: 'failed', operationId: 'op-d' })).toEqual([]);
  });
});

describe('store on embedded PGlite', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookrelay-pglite-'));
    store = await openStore({ dataDir: dir });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the same migrations twice and a repository round trip', async () => {
    await migrateStore(store);
    await migrateStore(store);
    await insertOperation(store.db, { id: 'op-lite', userId: 'u' });
    await appendOperationHooks(store.db, 'op-lite', [hook]);
    expect(await loadOperationHooks(store.db, 'op-lite')).toEqual([hook]);
    await insertPlaceholder(store.db, 'op-lite', 'c1');
    const results = await Promise.all(
      [1, 2, 3].map((i) => publishPlaceholderOnce(store.db, { operationId: 'op-lite', toolCallId: 'c1', result: { content: i } })),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
  });
});
