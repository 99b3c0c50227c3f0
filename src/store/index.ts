/** The store: SQLite history of the fleet. */
export * from './types.js';
export { StoreError, type StoreErrorCode } from './errors.js';
export { openStore, pruneGradually, SqliteStore, DEFAULT_MAX_GAP_MS, RAW_MAX_RANGE_MS, type StoreOptions, type RetentionMs, type PruneOptions } from './sqlite-store.js';
