/**
 * Migration 0008_scoped_state on a ledger that 0.2 wrote (SEC-H6, SEC-H7, Q1a): labelled rows are
 * re-keyed <origin>#<label> and keep their operator state, the idempotency index and the ordering
 * indexes are swapped without refusing any existing row, and ordering counters continue per hook.
 * Real Postgres: migrations 0000–0007 applied, rows inserted as the old code stored them, then 0008.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointKey } from '../../../src/contract/endpoint.ts';
import { MIGRATIONS_FOLDER } from '../../../src/store/migrate.ts';
import { createTestSchema, type TestSchema } from '../../support/db.ts';

let schema: TestSchema;
let client: pg.Client;

const files = readdirSync(MIGRATIONS_FOLDER)
  .filter((f) => f.endsWith('.sql'))
  .sort();
const apply = async (file: string) => {
  for (const statement of readFileSync(path.join(MIGRATIONS_FOLDER, file), 'utf8').split('--> statement-breakpoint')) {
    if (statement.trim()) await client.query(statement);
  }
};

const hook = (id: string, url: string, extra: Record<string, unknown> = {}) => ({ id, type: 'onComplete', webhook: { url, delivery: 'fetch', ...extra } });

async function insert(row: { id: string; op: string; hook: ReturnType<typeof hook>; key?: string; endpoint: string; sequence?: number; status?: string }) {
  await client.query(
    `insert into deliveries (id, operation_id, event_type, hook_id, hook, transport, status, payload, idempotency_key, endpoint_key, sequence)
     values ($1, $2, 'onComplete', $3, $4, 'fetch', $5, '{}'::jsonb, $6, $7, $8)`,
    [row.id, row.op, row.hook.id, JSON.stringify(row.hook), row.status ?? 'queued', row.key ?? null, row.endpoint, row.sequence ?? null],
  );
}

beforeAll(async () => {
  schema = await createTestSchema('mig8');
  client = new pg.Client({ connectionString: schema.url });
  await client.connect();
  const before = files.filter((f) => f < '0008');
  expect(files).toContain('0008_scoped_state.sql');
  for (const f of before) await apply(f);

  // A caller that labelled its hook with another origin's URL, a label shared by two origins (disabled by an operator), plain hooks.
  const poisoned = hook('b', 'https://b.example/in', { endpoint: 'https://a.example/policy' });
  const billing1 = hook('bill', 'HTTPS://One.Example:443/x?token=t', { endpoint: 'billing' });
  const billing2 = hook('bill2', 'http://two.example:80/y', { endpoint: 'billing' });
  const relative = hook('rel', '/hooks/in', { endpoint: 'app-hooks' });
  const plain = hook('audit', 'https://a.example/policy');
  await insert({ id: 'd1', op: 'op1', hook: poisoned, endpoint: 'https://a.example/policy', sequence: 1 });
  await insert({ id: 'd2', op: 'op1', hook: plain, endpoint: 'https://a.example/policy', sequence: 2 });
  await insert({ id: 'd3', op: 'op1', hook: poisoned, endpoint: 'https://a.example/policy', sequence: 3 });
  await insert({ id: 'd4', op: 'op1', hook: plain, endpoint: 'https://a.example/policy', sequence: 4 });
  await insert({ id: 'd5', op: 'op2', hook: billing1, endpoint: 'billing', status: 'held' });
  await insert({ id: 'd6', op: 'op2', hook: billing2, endpoint: 'billing', status: 'held' });
  await insert({ id: 'd7', op: 'op2', hook: relative, endpoint: 'app-hooks' });
  // One hook id whose URL changed inside one operation: two orders (per endpoint) that both have a 1 and a 2.
  await insert({ id: 'd8', op: 'op3', hook: hook('moved', 'https://x.example/a'), endpoint: 'https://x.example/a', sequence: 1, status: 'delivered' });
  await insert({ id: 'd9', op: 'op3', hook: hook('moved', 'https://y.example/b'), endpoint: 'https://y.example/b', sequence: 1 });
  await insert({ id: 'd10', op: 'op3', hook: hook('moved', 'https://x.example/a'), endpoint: 'https://x.example/a', sequence: 2 });
  // The same key and hook in two operations: unique before (per key, hook) only because of this one row each.
  await insert({ id: 'd11', op: 'op4', hook: plain, endpoint: 'https://a.example/policy', key: 'req-42' });
  await client.query(
    `insert into delivery_sequences (operation_id, endpoint_key, last_sequence) values ('op1', 'https://a.example/policy', 4), ('op3', 'https://x.example/a', 2), ('op3', 'https://y.example/b', 1)`,
  );
  await client.query(`insert into endpoints (key, disabled_at, disabled_by, disabled_reason, hold) values ('billing', now(), 'operator', 'maintenance', true)`);

  await apply('0008_scoped_state.sql');
});

afterAll(async () => {
  await client?.end();
  await schema?.drop();
});

const keyOf = async (id: string) =>
  (await client.query<{ endpoint_key: string }>('select endpoint_key from deliveries where id = $1', [id])).rows[0]?.endpoint_key;

describe('migration 0008_scoped_state on existing rows', () => {
  it('SEC-H6: labelled rows get the key endpointKey() gives their hook now; unlabelled rows keep theirs', async () => {
    expect(await keyOf('d1')).toBe(endpointKey({ url: 'https://b.example/in', endpoint: 'https://a.example/policy' }));
    expect(await keyOf('d1')).toBe('https://b.example#https://a.example/policy');
    expect(await keyOf('d2')).toBe('https://a.example/policy');
    expect(await keyOf('d5')).toBe(endpointKey({ url: 'HTTPS://One.Example:443/x?token=t', endpoint: 'billing' }));
    expect(await keyOf('d6')).toBe(endpointKey({ url: 'http://two.example:80/y', endpoint: 'billing' }));
    expect(await keyOf('d7')).toBe('app:#app-hooks');
  });

  it("SEC-H6: an operator's disable (with --hold) under an old label is copied to each new key of its rows", async () => {
    const rows = await client.query<{ key: string; disabled_by: string; hold: boolean }>(`select key, disabled_by, hold from endpoints order by key`);
    expect(rows.rows).toEqual([
      { key: 'billing', disabled_by: 'operator', hold: true },
      { key: 'http://two.example#billing', disabled_by: 'operator', hold: true },
      { key: 'https://one.example#billing', disabled_by: 'operator', hold: true },
    ]);
  });

  it('SEC-H7: sequences are kept per hook, a hook with two orders is renumbered in its old order, counters continue per hook', async () => {
    const seq = await client.query<{ id: string; sequence: number }>(`select id, sequence from deliveries where sequence is not null order by id`);
    expect(Object.fromEntries(seq.rows.map((r) => [r.id, r.sequence]))).toEqual({ d1: 1, d2: 2, d3: 3, d4: 4, d8: 1, d9: 2, d10: 3 });
    const counters = await client.query(`select operation_id, hook_id, last_sequence from delivery_sequences order by operation_id, hook_id`);
    expect(counters.rows).toEqual([
      { operation_id: 'op1', hook_id: 'audit', last_sequence: 4 },
      { operation_id: 'op1', hook_id: 'b', last_sequence: 3 },
      { operation_id: 'op3', hook_id: 'moved', last_sequence: 3 },
    ]);
  });

  it('Q1a: the idempotency key is unique per (operation, hook, key) afterwards: another operation may reuse it, the same one may not', async () => {
    await client.query(
      `insert into deliveries (id, operation_id, event_type, hook_id, hook, transport, payload, idempotency_key) values ('d12', 'op5', 'onComplete', 'audit', '{}', 'fetch', '{}', 'req-42')`,
    );
    await expect(
      client.query(
        `insert into deliveries (id, operation_id, event_type, hook_id, hook, transport, payload, idempotency_key) values ('d13', 'op4', 'onComplete', 'audit', '{}', 'fetch', '{}', 'req-42')`,
      ),
    ).rejects.toThrow(/deliveries_idempotency_uq/);
  });
});
