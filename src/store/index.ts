/** The store: SQLite history of the fleet and the alert repositories (src/store/sqlite/). */
export * from '../domain/store.js';
export { StoreError, type StoreErrorCode } from './errors.js';
export { DamagedRows, type JsonTable } from './damaged-rows.js';
export { openStore, SqliteStore, type StoreOptions } from './sqlite/store.js';
export { DAEMON_HEARTBEAT_MS, DAEMON_STALE_AFTER_MS } from './daemon-hold.js';
export type { DaemonHold, DaemonHolder, DaemonLock } from '../domain/daemon-hold.js';
export { DEFAULT_MAX_GAP_MS } from './history/writer.js';
export { RAW_MAX_RANGE_MS } from './history/reader.js';
export { pruneGradually, type RetentionMs, type PruneOptions } from './history/retention.js';
export type { SqliteOutbox } from './sqlite/outbox.js';
export type { SqliteGroupQueue } from './sqlite/group-queue.js';
export type { DataStore } from './data-store.js';
export { openDataStore, openSqliteFile, openSqliteOf, type OpenOptions } from './open.js';
