export * from './schema.ts';
export * from './db.ts';
export * from './migrate.ts';
export * from './operationsRepo.ts';
export * from './placeholdersRepo.ts';
export * from './deliveriesRepo.ts';
