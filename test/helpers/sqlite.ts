/**
 * The store's own SQLite connection, for tests only. Production code never sees it (SqliteStore
 * keeps it private); tests use it to plant damaged rows, to inspect tables the API does not show,
 * and to set per-connection pragmas (busy_timeout, max_page_count) that a second connection could
 * not set for the daemon; `fileRows` reads a database file with a read-only connection of its own.
 */
import Database from 'better-sqlite3';
import type { SqliteStore } from '../../src/store/index.js';

export function connectionOf(store: SqliteStore): Database.Database {
  return (store as unknown as { db: Database.Database }).db;
}

/** The rows of `sql` (with `params`) on the SQLite file at `dbPath`, read with a read-only connection of its own. */
export function fileRows<T>(dbPath: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
