/** The store: SQLite history of the fleet and the alert repositories (src/store/sqlite/). */
export * from './types.js';
export { StoreError, type StoreErrorCode } from './errors.js';
export { DamagedRows, type JsonTable } from './damaged-rows.js';
export { openStore, SqliteStore, DEFAULT_MAX_GAP_MS, DAEMON_HEARTBEAT_MS, DAEMON_STALE_AFTER_MS, type StoreOptions, type DaemonHolder, type DaemonLock } from './sqlite/store.js';
export { RAW_MAX_RANGE_MS } from './sqlite/reader.js';
export { pruneGradually, type RetentionMs, type PruneOptions } from './sqlite/retention.js';
export type { SqliteOutbox } from './sqlite/outbox.js';
export type { SqliteGroupQueue } from './sqlite/group-queue.js';
