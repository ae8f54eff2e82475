import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The SQL migrations shipped with the package (drizzle-kit output): ../../migrations from src/store or dist/store. */
export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');
