/**
 * The embedded store's packages (@electric-sql/pglite, @electric-sql/pglite-socket) are optional
 * peer dependencies: imported only when the embedded store is opened or served, and a missing one
 * is an error saying what to install — or to set DATABASE_URL instead.
 */
import { EmbeddedStoreUnavailableError } from '../contract/errors.ts';

export async function importEmbedded<M extends '@electric-sql/pglite' | '@electric-sql/pglite-socket'>(
  name: M,
): Promise<M extends '@electric-sql/pglite' ? typeof import('@electric-sql/pglite') : typeof import('@electric-sql/pglite-socket')> {
  try {
    return (await import(name)) as never;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' && error instanceof Error && error.message.includes(`'${name}'`)) {
      throw new EmbeddedStoreUnavailableError(
        `the embedded store needs the optional packages @electric-sql/pglite and @electric-sql/pglite-socket (npm install @electric-sql/pglite @electric-sql/pglite-socket), or set DATABASE_URL to a Postgres server`,
      );
    }
    throw error;
  }
}
