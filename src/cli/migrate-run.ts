/**
 * What `boxwatch migrate` does (registered by migrate.ts, loaded only when it runs: it brings the
 * PostgreSQL driver): `boxwatch migrate --from sqlite:FILE --to postgres://...` (and back, for a backup of a
 * PostgreSQL store as a SQLite file): copies a whole database (src/store/copy.ts: history, alert
 * state and history, silences, acks, queue, outbox, calls) and verifies every table's count. The
 * target is written in one transaction and must be empty; a SQLite target must not exist yet (it
 * is written beside and renamed into place when verified). A PostgreSQL URL is shown without its
 * password, in output and errors.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import { systemClock } from '../clock.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { copyTables, inSnapshot, PostgresCopyEnd, SqliteCopyEnd, type CopiedTable, type CopyReport, type CopySource, type CopyTarget } from '../store/copy.js';
import { openDatabase } from '../store/migrate.js';
import { PostgresDatabase } from '../store/postgres/database.js';
import { describeDatabaseUrl } from '../store/postgres/index.js';
import { redact } from '../redact.js';

/** One side of a migration: a SQLite file or a PostgreSQL URL. */
export type DatabaseEnd = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/** `sqlite:FILE` or `postgres://...` / `postgresql://...`; a UsageError naming the option otherwise. */
export function parseDatabaseEnd(text: string, option: string): DatabaseEnd {
  if (text.startsWith('sqlite:') && text.length > 'sqlite:'.length) return { kind: 'sqlite', path: text.slice('sqlite:'.length) };
  if (/^postgres(ql)?:\/\//.test(text)) return { kind: 'postgres', url: text };
  // The value is not repeated: it may be a URL with a password.
  throw new UsageError(`${option} must be sqlite:FILE or a postgres:// URL`);
}

export function nameOf(end: DatabaseEnd): string {
  return end.kind === 'sqlite' ? `sqlite:${end.path}` : describeDatabaseUrl(end.url);
}

/** Copies `from` into `to` (see the header); `progress` hears of each table copied. */
export async function migrateDatabase(from: DatabaseEnd, to: DatabaseEnd, progress?: (t: CopiedTable) => void): Promise<CopyReport> {
  const passwords = [from, to].flatMap((e) => (e.kind === 'postgres' ? [new URL(e.url).password] : [])).filter((p) => p !== '');
  try {
    return await withSource(from, (source) => withTarget(to, (target) => copyTables(source, target, progress)));
  } catch (err) {
    // Whatever failed (a driver's text included), the message never carries a password.
    if (err instanceof BoxwatchError) throw new BoxwatchError(err.code, redact(err.message, passwords));
    throw new BoxwatchError('migrate_failed', `migrate failed: ${redact((err as Error).message, passwords)}`);
  }
}

async function withSource<T>(end: DatabaseEnd, fn: (source: CopySource) => Promise<T>): Promise<T> {
  if (end.kind === 'postgres') {
    const db = await PostgresDatabase.open(end.url);
    try {
      return await inSnapshot(db, (tx) => fn(new PostgresCopyEnd(tx, db.name)));
    } finally {
      await db.close();
    }
  }
  const db = openDatabase(end.path, { clock: systemClock, readonly: true });
  try {
    return await inSqliteTransaction(db, 'BEGIN', () => fn(new SqliteCopyEnd(db, nameOf(end))));
  } finally {
    db.close();
  }
}

async function withTarget<T>(end: DatabaseEnd, fn: (target: CopyTarget) => Promise<T>): Promise<T> {
  if (end.kind === 'postgres') {
    const db = await PostgresDatabase.open(end.url);
    try {
      return await db.transaction((tx) => fn(new PostgresCopyEnd(tx, db.name)));
    } finally {
      await db.close();
    }
  }
  if (existsSync(end.path)) throw new BoxwatchError('migrate_target_exists', `${end.path} exists already; migrate writes a new SQLite file only`);
  const tmp = join(dirname(end.path), `.${basename(end.path)}.partial-${process.pid}`);
  let db: Database.Database | undefined;
  try {
    db = openDatabase(tmp, { clock: systemClock });
    const open = db;
    const result = await inSqliteTransaction(open, 'BEGIN IMMEDIATE', () => fn(new SqliteCopyEnd(open, nameOf(end))));
    open.close();
    db = undefined;
    renameSync(tmp, end.path);
    return result;
  } finally {
    db?.close();
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  }
}

/** Runs `fn` between `begin` and COMMIT on a better-sqlite3 connection (ROLLBACK when it throws). */
async function inSqliteTransaction<T>(db: Database.Database, begin: string, fn: () => Promise<T>): Promise<T> {
  db.exec(begin);
  try {
    const result = await fn();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

