/** The PostgreSQL store (`storage.url`): the fleet history and the alert repositories on PostgreSQL (see store.ts). */
export { PostgresStore, type PostgresStoreOptions } from './store.js';
export { describeDatabaseUrl } from './database.js';
export type { PostgresOutbox } from './outbox.js';
export type { PostgresGroupQueue } from './group-queue.js';
