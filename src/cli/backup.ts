/**
 * `boxwatch backup FILE [--config FILE | --db FILE] [--force]`: a consistent copy of the live
 * database with SQLite's online backup API, safe while the daemon runs (the daemon keeps writing;
 * SQLite WAL lets the copy read a snapshot beside it). The copy is written to a temporary file
 * beside FILE and renamed into place when complete, so FILE is never a half-written database.
 * An existing FILE is kept unless --force.
 */
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { StoreError, storeNotFound } from '../store/errors.js';
import { APPLICATION_ID } from '../store/migrate.js';
import type { CliContext, RegisterCommand } from './context.js';
import { sqliteOnly } from './store-access.js';

interface BackupOptions {
  config?: string;
  db?: string;
  force?: boolean;
}

export interface BackupResult {
  /** Size of the written copy in bytes. */
  bytes: number;
  pages: number;
}

/**
 * Copies the boxwatch database at `source` to `target` (online backup; the source may be in use).
 * Refuses a source that is missing or not a boxwatch database, and an existing target unless
 * `force`. Works on any schema version, so it can be taken before an upgrade.
 */
export async function backupDatabase(source: string, target: string, options: { force?: boolean } = {}): Promise<BackupResult> {
  if (!existsSync(source)) throw storeNotFound(source);
  if (existsSync(target) && !options.force) {
    throw new BoxwatchError('backup_target_exists', `${target} exists already; refusing to overwrite it (pass --force to replace it)`);
  }
  const db = openSource(source);
  const tmp = join(dirname(target), `.${basename(target)}.partial-${process.pid}`);
  try {
    let pages = 0;
    await db.backup(tmp, {
      // 100 pages first, then the rest in one step: one short read of a consistent snapshot,
      // which a write by the daemon between small steps would otherwise restart again and again.
      progress: ({ totalPages }) => {
        pages = totalPages;
        return Math.max(totalPages, 100);
      },
    });
    renameSync(tmp, target);
    return { bytes: statSync(target).size, pages };
  } catch (err) {
    rmSync(tmp, { force: true });
    if (err instanceof BoxwatchError) throw err;
    throw new BoxwatchError('backup_failed', `backup to ${target} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
}

/** Opens the source read-only and checks that it is a boxwatch database. */
function openSource(path: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreError('store_not_sqlite', `cannot open database ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const appId = db.pragma('application_id', { simple: true }) as number;
    if (appId !== APPLICATION_ID) throw new StoreError('store_foreign', `${path} is not a boxwatch database; refusing to back it up`);
    return db;
  } catch (err) {
    db.close();
    if (err instanceof StoreError) throw err;
    throw new StoreError('store_not_sqlite', `${path} is not a boxwatch database (not a SQLite file, or damaged)`, { cause: err });
  }
}

/** 1536 -> "1.5 KiB". */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

export const registerBackup: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('backup')
    .description('copy the live database to FILE (SQLite online backup; safe while the daemon runs)')
    .argument('<file>', 'where to write the copy')
    .option('-c, --config <file>', 'back up the database this configuration names (default: $BOXWATCH_CONFIG, else ./boxwatch.yaml)')
    .option('--db <file>', 'back up this database file (instead of the one the configuration names)')
    .option('-f, --force', 'replace FILE if it exists')
    .action(async (file: string, opts: BackupOptions) => {
      if (opts.config !== undefined && opts.db !== undefined) throw new UsageError('give --config or --db, not both');
      const loaded = opts.db === undefined ? loadConfig({ path: opts.config, env: ctx.env, uses: ['storage'] }).config : undefined;
      const { path: source } = sqliteOnly('backup', { db: opts.db, loaded }, ctx, 'back PostgreSQL up with pg_dump (docs/operations.md), or copy it to a SQLite file with `boxwatch migrate --from postgres://... --to sqlite:FILE`');
      if (source === ':memory:') throw new UsageError('the configuration names an in-memory database (storage.path ":memory:"); there is nothing to back up');
      const { bytes } = await backupDatabase(source, file, { force: opts.force });
      ctx.out(`backed up ${source} to ${file} (${formatBytes(bytes)})\n`);
    });
};
