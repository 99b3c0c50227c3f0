/**
 * Opening the SQLite file and bringing its schema up to date. Migrations are the numbered files
 * migrations/NNNN_name.sql, applied in order, each in its own transaction together with its row in
 * `schema_migrations`. A file that is not SQLite, a SQLite database that boxwatch did not create
 * (its application_id is not ours and it has tables), and a database carrying a migration this
 * code does not know are refused with a StoreError. Before migrating a database that already
 * holds applied migrations (an upgrade), a backup copy is written beside it.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { packageFile } from '../package-files.js';
import { dirname, join } from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { StoreError, storeNotFound, walMissingAdvice } from './errors.js';

/** 'bxwt' in the SQLite header: marks a database as boxwatch's. */
export const APPLICATION_ID = 0x62787774;
const MIGRATION_FILE = /^(\d{4})_[A-Za-z0-9_-]+\.sql$/;

export interface Migration {
  /** File name without `.sql`, e.g. `0001_init`. */
  name: string;
  sql: string;
}

/** The migrations/ folder of this installation: beside the package.json above this module. */
export function defaultMigrationsDir(): string {
  return packageFile('migrations');
}

export function loadMigrations(dir: string): Migration[] {
  return readdirSync(dir)
    .filter((f) => MIGRATION_FILE.test(f))
    .sort()
    .map((f) => ({ name: f.slice(0, -'.sql'.length), sql: readFileSync(join(dir, f), 'utf8') }));
}

export interface OpenOptions {
  migrationsDir?: string;
  clock: Clock;
  logger?: Logger;
  /** Open an existing database without writing to it (no migrations are applied). */
  readonly?: boolean;
}

/** Opens (creating if needed) and migrates the database at `path`. */
export function openDatabase(path: string, options: OpenOptions): Database.Database {
  if (!options.readonly && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  if (options.readonly && !existsSync(path)) throw storeNotFound(path);
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new StoreError('store_not_sqlite', `cannot open database ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    checkIdentity(db, path);
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    db.pragma('cache_size = -32768'); // 32 MiB
    migrate(db, path, loadMigrations(options.migrationsDir ?? defaultMigrationsDir()), options);
    return db;
  } catch (err) {
    db.close();
    throw damagedOr(err, path);
  }
}

/**
 * SQLite's "database disk image is malformed" (a damaged page met while opening) as a typed
 * `store_corrupt` StoreError; any other error as it is.
 */
export function damagedOr(err: unknown, path: string): unknown {
  if (err instanceof StoreError || (err as { code?: string } | null)?.code !== 'SQLITE_CORRUPT') return err;
  return new StoreError('store_corrupt', `${path} is damaged (${(err as Error).message}); restore it from a backup or move it away`, { cause: err });
}

function checkIdentity(db: Database.Database, path: string): void {
  let appId: number;
  let objects: number;
  try {
    // One read transaction: both from one state of the file, not the id before and the tables
    // after another process (a replica starting at the same moment) committed its first migration.
    [appId, objects] = db.transaction((): [number, number] => [db.pragma('application_id', { simple: true }) as number, (db.prepare('SELECT count(*) AS n FROM sqlite_schema').get() as { n: number }).n])();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw new StoreError('store_not_sqlite', `${path} is not a boxwatch database (not a SQLite file, or damaged)`, { cause: err });
    }
    // A reader finding the -wal file gone (or re-created empty by an earlier reader) while the
    // shared-memory index still describes it: the file was deleted under a running daemon.
    const wal = `${path}-wal`;
    if (code?.startsWith('SQLITE_IOERR') && (!existsSync(wal) || statSync(wal).size === 0) && existsSync(`${path}-shm`)) {
      throw new StoreError('store_wal_missing', walMissingAdvice(path), { cause: err });
    }
    throw err;
  }
  if (appId !== APPLICATION_ID && (appId !== 0 || objects > 0)) {
    throw new StoreError('store_foreign', `${path} is a SQLite database that boxwatch did not create; refusing to use it`);
  }
}

function migrate(db: Database.Database, path: string, migrations: readonly Migration[], options: OpenOptions): void {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  const applied = hasTable ? (db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all() as string[]) : [];
  const known = new Set(migrations.map((m) => m.name));
  const unknown = applied.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new StoreError(
      'store_schema_newer',
      `database schema is newer than this boxwatch; upgrade boxwatch (the database has migration ${unknown.join(', ')}, unknown to this version)`,
    );
  }
  const done = new Set(applied);
  const pending = migrations.filter((m) => !done.has(m.name));
  if (pending.length === 0) return;
  if (options.readonly) {
    throw new StoreError('store_schema_outdated', `database schema is older than this boxwatch; run boxwatch once with write access to migrate it (pending: ${pending.map((m) => m.name).join(', ')})`);
  }
  if (applied.length > 0 && path !== ':memory:') backupBeforeMigrating(db, path, pending[0] as Migration, options);
  for (const m of pending) {
    // IMMEDIATE: the write lock is taken before the check, so processes opening one new database
    // at once (replicas starting together) apply each migration once; the others skip it.
    const apply = db.transaction((): boolean => {
      db.pragma(`application_id = ${APPLICATION_ID}`);
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) WITHOUT ROWID');
      if (db.prepare('SELECT 1 FROM schema_migrations WHERE name = ?').get(m.name) !== undefined) return false;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run(m.name, options.clock.now());
      return true;
    });
    let appliedHere: boolean;
    try {
      appliedHere = apply.immediate();
    } catch (err) {
      throw new StoreError('store_migration_failed', `migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
    }
    if (appliedHere) options.logger?.info({ migration: m.name }, 'database migration applied');
  }
}

/**
 * Before the first migration of an upgrade touches a database that holds data, a copy of it as it
 * is goes beside it: `<db>.before-<migration>.bak` (`.2.bak`, `.3.bak`... if that exists from an
 * earlier attempt). Written with VACUUM INTO (one consistent, compact snapshot). Without the copy
 * nothing is migrated.
 */
function backupBeforeMigrating(db: Database.Database, path: string, first: Migration, options: OpenOptions): string {
  let target = `${path}.before-${first.name}.bak`;
  for (let n = 2; existsSync(target); n++) target = `${path}.before-${first.name}.${n}.bak`;
  try {
    db.prepare('VACUUM INTO ?').run(target);
  } catch (err) {
    rmSync(target, { force: true });
    throw new StoreError('store_migration_failed', `cannot write the backup ${target} before migrating (nothing was migrated): ${(err as Error).message}`, { cause: err });
  }
  options.logger?.info({ backup: target, migration: first.name }, 'database backed up before migrating');
  return target;
}
