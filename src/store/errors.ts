/**
 * Errors of the store, each with a stable code:
 * - `store_not_found`: a read-only open of a file that does not exist;
 * - `store_not_sqlite`: the file is not a SQLite database;
 * - `store_foreign`: a SQLite database that boxwatch did not create;
 * - `store_schema_newer`: the database was migrated by a newer boxwatch;
 * - `store_schema_outdated`: a read-only open found migrations still to apply;
 * - `store_migration_failed`: a migration file failed (nothing of it was applied);
 * - `store_corrupt`: stored data could not be read;
 * - `store_read_only`: a write on a store opened read-only;
 * - `store_in_use`: another running daemon holds the database;
 * - `store_wal_missing`: the database's `-wal` file was deleted while a daemon has it open;
 * - `store_unavailable`: the PostgreSQL database cannot be reached or refused the connection;
 * - `unknown_box`: a query named a serial the store has never seen;
 * - `bad_range`: a query range is empty or inverted.
 */
import { BoxwatchError } from '../errors.js';

export type StoreErrorCode =
  | 'store_not_found'
  | 'store_not_sqlite'
  | 'store_foreign'
  | 'store_schema_newer'
  | 'store_schema_outdated'
  | 'store_migration_failed'
  | 'store_corrupt'
  | 'store_in_use'
  | 'store_wal_missing'
  | 'store_unavailable'
  | 'store_read_only'
  | 'unknown_box'
  | 'bad_range';

export class StoreError extends BoxwatchError {
  declare readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
  }
}

/**
 * The code of an error the database raised: SQLite's result code (`SQLITE_BUSY`, `SQLITE_FULL`,
 * ...), PostgreSQL's SQLSTATE as `PG_40001`, or `store_unavailable` (the PostgreSQL server cannot
 * be reached); undefined for any other error (a bug). A cycle, a group release or a
 * call sync that failed with one rolled back whole; the next one tries again.
 */
export function storeFailureCode(err: unknown): string | undefined {
  if (err instanceof StoreError) return err.code === 'store_unavailable' ? err.code : undefined;
  const e = err as { code?: unknown; severity?: unknown } | null;
  const code = e?.code;
  if (typeof code !== 'string') return undefined;
  if (code.startsWith('SQLITE_')) return code;
  return typeof e?.severity === 'string' && /^[0-9A-Z]{5}$/.test(code) ? `PG_${code}` : undefined;
}

/**
 * What to do when the `-wal` file was deleted under a running daemon: other processes then fail
 * with "disk I/O error", while the daemon still writes to the deleted file; a clean stop writes
 * everything back into the database.
 */
export function walMissingAdvice(path: string): string {
  return `${path}-wal was deleted while a boxwatch daemon has ${path} open, so no other process can read the database: restart the daemon cleanly (SIGTERM, e.g. \`systemctl restart boxwatch\`), which writes its changes back into the database; do not kill -9 it, or the changes since its last checkpoint are lost`;
}

/** The one message for a database file that does not exist, saying what to do next. */
export function storeNotFound(path: string): StoreError {
  return new StoreError(
    'store_not_found',
    `no database at ${path}: start the daemon with \`boxwatch run\` (it creates the database), or pass --db FILE to read another one`,
  );
}
