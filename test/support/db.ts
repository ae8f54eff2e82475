import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore, type Store } from '../../src/store/db.ts';
import { migrateStore } from '../../src/store/migrate.ts';

/** The shared test server (trust auth). CI and every session have it on 127.0.0.1:5432. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type TestSchema = {
  /** A connection string whose search_path is the private schema. */
  url: string;
  schema: string;
  drop(): Promise<void>;
};

/** A fresh schema of its own, so test files run in parallel and repeatedly; dropped after. */
export async function createTestSchema(prefix = 't'): Promise<TestSchema> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}

export type TestStore = TestSchema & { store: Store; cleanup(): Promise<void> };

/** A migrated store in its own schema. */
export async function createTestStore(prefix = 't'): Promise<TestStore> {
  const schema = await createTestSchema(prefix);
  const store = await openStore({ databaseUrl: schema.url });
  await migrateStore(store, { migrationsSchema: schema.schema });
  return {
    ...schema,
    store,
    async cleanup() {
      await store.close().catch(() => undefined);
      await schema.drop();
    },
  };
}
