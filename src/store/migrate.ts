/**
 * Opening the SQLite file and bringing its schema up to date. Migrations are the numbered files
 * migrations/NNNN_name.sql, the pending ones applied in order in one IMMEDIATE transaction together
 * with their rows in `schema_migrations` (several processes opening one new file at once: one
 * migrates, the others wait for it). A file that is not SQLite, a SQLite database that boxwatch did
 * not create (its application_id is not ours and it has tables), and a database carrying a
 * migration this code does not know are refused with a StoreError. Before migrating a database that
 * already holds applied migrations (an upgrade), a backup copy is written beside it.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { packageFile } from '../package-files.js';
import { basename, dirname, join } from 'node:path';
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
      enableWal(db);
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
 * Switches the file to WAL. On a new file this writes its header, and SQLite does not wait for a
 * lock here: another process creating the same file at this moment (a replica starting too) makes
 * it fail at once with SQLITE_BUSY. Tried again after a short pause, up to about busy_timeout; the
 * other process's hold is brief (it is doing the same, or reading the header). A file already in
 * WAL needs no lock.
 */
function enableWal(db: Database.Database): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 1; ; attempt++) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= WAL_ATTEMPTS) throw err;
      Atomics.wait(pause, 0, 0, 10 + Math.random() * 40); // jittered: the processes do not retry in step
    }
  }
}
const WAL_ATTEMPTS = 200; // × 10–50 ms: about 6 s at most

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

/** The migrations a database has applied, read in one transaction (one state of the file). */
function appliedMigrations(db: Database.Database, migrations: readonly Migration[]): { applied: string[]; pending: Migration[] } {
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
  return { applied, pending: migrations.filter((m) => !done.has(m.name)) };
}

/**
 * How long a process opening the database waits for another one's migration (the write lock):
 * an upgrade of a large database, with its backup, can take a while.
 */
const MIGRATION_LOCK_WAIT_MS = 60_000;

/**
 * Applies the pending migrations: all of them in one IMMEDIATE transaction, so processes opening
 * one database at once (replicas starting together on a new file) wait for the first one's write
 * lock, then find nothing left to do; none ever sees a half-migrated file. Whether this is an
 * upgrade (the file holds migrations of an older boxwatch: back it up first) is decided under
 * that lock too.
 */
function migrate(db: Database.Database, path: string, migrations: readonly Migration[], options: OpenOptions): void {
  // Without the lock first: a database already up to date (every restart) takes no write lock.
  const seen = db.transaction(() => appliedMigrations(db, migrations))();
  if (seen.pending.length === 0) return;
  if (options.readonly) {
    // A read-only open neither waits for nor takes the write lock: a boxwatch starting right now may
    // be migrating the file (this open read it as it was before).
    throw new StoreError(
      'store_schema_outdated',
      `database schema is older than this boxwatch (pending: ${seen.pending.map((m) => m.name).join(', ')}); if a boxwatch daemon is starting right now, it is migrating it: try again in a moment; else run boxwatch once with write access to migrate it`,
    );
  }
  const apply = db.transaction((): Migration[] => {
    const { applied, pending } = appliedMigrations(db, migrations);
    if (pending.length === 0) return []; // another process migrated it while this one waited
    if (applied.length > 0 && path !== ':memory:') backupBeforeMigrating(path, pending[0] as Migration, options);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) WITHOUT ROWID');
    for (const m of pending) {
      try {
        db.exec(m.sql);
      } catch (err) {
        throw new StoreError('store_migration_failed', `migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run(m.name, options.clock.now());
    }
    return pending;
  });
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma(`busy_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
  let appliedHere: Migration[];
  try {
    appliedHere = apply.immediate();
  } catch (err) {
    if (err instanceof StoreError) throw err;
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      throw new StoreError('store_migration_failed', `${path} stayed locked by another process for ${MIGRATION_LOCK_WAIT_MS / 1000} s while this one waited to migrate it (another boxwatch migrating a large database?); nothing was migrated, start again once it is done`, { cause: err });
    }
    throw new StoreError('store_migration_failed', `migrating ${path} failed (nothing was migrated): ${(err as Error).message}`, { cause: err });
  } finally {
    db.pragma(`busy_timeout = ${busyTimeout}`);
  }
  for (const m of appliedHere) options.logger?.info({ migration: m.name }, 'database migration applied');
}

/**
 * Before the first migration of an upgrade touches a database that holds data, a copy of it as it
 * is goes beside it: `<db>.before-<migration>.bak` (`.2.bak`, `.3.bak`... if that exists from an
 * earlier attempt). Called under the migration's write lock, before anything is written: a second
 * read-only connection writes the copy with VACUUM INTO (one consistent, compact snapshot of the
 * file as it is) under a name of this process's own, synced to the disk, then links it to the
 * first free name (a link never replaces a file) and syncs the folder. Without the copy nothing is
 * migrated.
 */
function backupBeforeMigrating(path: string, first: Migration, options: OpenOptions): string {
  removeDeadPartials(path);
  const base = `${path}.before-${first.name}`;
  const partial = `${base}.${process.pid}-${randomBytes(4).toString('hex')}.partial`;
  let target = `${base}.bak`;
  try {
    const source = new Database(path, { readonly: true, fileMustExist: true });
    try {
      source.prepare('VACUUM INTO ?').run(partial);
    } finally {
      source.close();
    }
    fsyncPath(partial); // VACUUM INTO does not sync its output; the migration's commit will be synced
    for (let n = 2; !linkedTo(partial, target); n++) target = `${base}.${n}.bak`;
    rmSync(partial, { force: true }); // gone already when renamed (linkedTo)
    fsyncPath(dirname(path)); // the backup's name, before the migration that relies on it
  } catch (err) {
    throw new StoreError('store_migration_failed', `cannot write the backup ${target} before migrating (nothing was migrated): ${(err as Error).message}`, { cause: err });
  } finally {
    rmSync(partial, { force: true });
  }
  options.logger?.info({ backup: target, migration: first.name }, 'database backed up before migrating');
  return target;
}

/**
 * The partial backups (and their `-journal`) left by processes killed while they wrote one (a
 * supervisor's start timeout, the OOM killer): only the holder of the write lock writes a backup,
 * so under it every one found is such a leftover.
 */
function removeDeadPartials(path: string): void {
  const prefix = `${basename(path)}.before-`;
  for (const f of readdirSync(dirname(path))) if (f.startsWith(prefix) && /\.partial(-journal)?$/.test(f)) rmSync(join(dirname(path), f), { force: true });
}

/** Flushes a file, or a folder's entries, to the disk. */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Gives `file` the name `target` too; false when `target` exists (it is never replaced). */
function linkedTo(file: string, target: string): boolean {
  try {
    linkSync(file, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    // A file system without hard links: a rename is as safe here, the caller holds the write
    // lock, so no other boxwatch is writing a backup of this database.
    if (existsSync(target)) return false;
    renameSync(file, target);
    return true;
  }
}
