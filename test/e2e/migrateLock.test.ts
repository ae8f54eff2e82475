/**
 * Several replicas (and a migrate job) starting at once on a fresh database must all come up:
 * migrations are serialized by a Postgres advisory lock, and the worker can be told not to migrate.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/db.ts';
import { migrateStore, MIGRATIONS_FOLDER } from '../../src/store/migrate.ts';
import * as storeSchema from '../../src/store/schema.ts';
import { createTestSchema, TEST_DATABASE_URL, type TestSchema } from '../support/db.ts';
import { spawnWorker, startHookrelay } from '../support/hookrelayProcess.ts';
import { TEST_REDIS_URL } from '../support/redisKeys.ts';

const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
// Every table the drizzle schema declares, plus drizzle's own journal: a migration set that misses
// one fails here, and a new table needs no edit.
const TABLES = [
  '__drizzle_migrations',
  ...Object.values(storeSchema as Record<string, unknown>).flatMap((t) => (is(t, PgTable) ? [getTableName(t)] : [])),
].sort();

async function tablesOf(schema: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    const r = await c.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [schema]);
    return r.rows.map((row) => row.table_name);
  } finally {
    await c.end();
  }
}

async function appliedMigrations(schema: string): Promise<number> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    const r = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".__drizzle_migrations`);
    return r.rows[0]!.n;
  } finally {
    await c.end();
  }
}

describe('migrate lock', () => {
  const schemas: TestSchema[] = [];
  afterEach(async () => {
    for (const s of schemas.splice(0)) await s.drop();
  });

  it('migrate lock: 4 `hookrelay migrate` processes and 3 in-process migrations on separate pools, all at once on a fresh schema → all succeed, every table exists once', async () => {
    const schema = await createTestSchema('miglock');
    schemas.push(schema);
    const processes = Array.from({ length: 4 }, () => startHookrelay(['migrate'], { DATABASE_URL: schema.url }, { inheritEnv: false }));
    const inProcess = Array.from({ length: 3 }, async () => {
      const store = await openStore({ databaseUrl: schema.url, maxConnections: 2 });
      try {
        await migrateStore(store);
      } finally {
        await store.close();
      }
    });
    const [codes, local] = await Promise.all([Promise.all(processes.map((p) => p.exited)), Promise.allSettled(inProcess)]);
    for (const [i, p] of processes.entries()) expect({ i, code: codes[i], output: p.output() }).toEqual({ i, code: 0, output: 'migrations applied\n' });
    expect(local.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(await tablesOf(schema.schema)).toEqual(TABLES);
    expect(await appliedMigrations(schema.schema)).toBe(journal.entries.length);
  }, 90_000);

  it('migrate lock: two workers and a migrate job started together on a fresh schema all come up', async () => {
    const schema = await createTestSchema('miglockw');
    schemas.push(schema);
    const env = { DATABASE_URL: schema.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: `miglock-${schema.schema}`, HOOKRELAY_HTTP_PORT: '0' };
    const workers = [spawnWorker(env), spawnWorker(env)];
    const job = startHookrelay(['migrate'], { DATABASE_URL: schema.url }, { inheritEnv: false });
    try {
      expect(await job.exited).toBe(0);
      await Promise.all(workers.map((w) => w.ready(60_000)));
      expect(await tablesOf(schema.schema)).toEqual(TABLES);
      expect(await appliedMigrations(schema.schema)).toBe(journal.entries.length);
    } finally {
      for (const w of workers) expect(await w.stop()).toBe(0);
    }
  }, 90_000);

  it('migrate lock: HOOKRELAY_MIGRATE=false and --no-migrate start the worker without touching the schema', async () => {
    const schema = await createTestSchema('nomig');
    schemas.push(schema);
    const env = { DATABASE_URL: schema.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: `nomig-${schema.schema}`, HOOKRELAY_HTTP_PORT: '0' };
    for (const worker of [spawnWorker({ ...env, HOOKRELAY_MIGRATE: 'false' }), spawnWorker(env, ['--no-migrate'])]) {
      try {
        await worker.ready();
        expect(worker.output()).toContain('migrations skipped');
        expect(await tablesOf(schema.schema)).toEqual([]);
      } finally {
        await worker.stop();
      }
    }
  }, 90_000);
});
