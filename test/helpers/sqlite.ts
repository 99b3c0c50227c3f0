/**
 * The store's own SQLite connection, for tests only. Production code never sees it (SqliteStore
 * keeps it private); tests use it to plant damaged rows, to inspect tables the API does not show,
 * and to set per-connection pragmas (busy_timeout, max_page_count) that a second connection could
 * not set for the daemon.
 */
import type Database from 'better-sqlite3';
import type { SqliteStore } from '../../src/store/index.js';

export function connectionOf(store: SqliteStore): Database.Database {
  return (store as unknown as { db: Database.Database }).db;
}
