/** The PostgreSQL store (`storage.url`): the alert repositories on PostgreSQL (see store.ts for what it holds). */
export { PostgresStore, type PostgresStoreOptions, type AlertView } from './store.js';
export { describeDatabaseUrl } from './database.js';
export type { PostgresOutbox } from './outbox.js';
export type { PostgresGroupQueue } from './group-queue.js';
