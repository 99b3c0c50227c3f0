/**
 * Opens the store for a command, and closes it afterwards: the database given with `--db`, else
 * the one the configuration names (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml), of which only
 * the sections the read commands use must have their variables set (not the notifiers' secrets).
 * Times are measured from now, or from the database's last poll when that is later (a demo
 * database, on simulated time). Read-only by default: safe while the daemon runs (SQLite WAL). `{ write: true }` opens the
 * existing database read-write (silences); it never creates one.
 */
import { existsSync } from 'node:fs';
import { Option } from 'commander';
import { formatDuration } from '../duration.js';
import { STORE_SECTIONS, loadConfig, sqlitePath, type Config } from '../config/index.js';
import type { AlertQueries, SilenceWrites } from '../alerts/repositories.js';
import { storeNotFound } from '../store/errors.js';
import { openStore, type DataStore, type SqliteStore } from '../store/index.js';
import type { CliContext } from './context.js';

export interface StoreSource {
  config?: string;
  db?: string;
}

/** What a command gets besides the store: the alert tables, and the configuration when one was read. */
export interface StoreExtras {
  alerts: AlertQueries & SilenceWrites;
  /** null when only `--db` was given (no configuration read). */
  config: Config | null;
}

export interface StoreAccessOptions {
  /** Open read-write (the database must exist already). */
  write?: boolean;
}

export function dbOption(): Option {
  return new Option('--db <file>', 'database file to read (instead of the one the configuration names)');
}

/**
 * "Now" for reading a database: this machine's time, except for a demo database (simulated time,
 * running up to 60x ahead of the wall clock) whose last poll is later: then the time of that
 * poll, with a note on stderr, so that `last seen`, `--since 2h` and uptime are measured on the
 * database's own clock.
 */
async function readingTime(store: DataStore, now: number, ctx: CliContext): Promise<number> {
  const last = await store.lastCycle();
  const end = last === undefined ? now : last.startedAt + last.durationMs;
  if ((await store.clockKind()) !== 'simulated' || end <= now) return now;
  ctx.err(`note: a demo database, on simulated time (its last poll is ${formatDuration(end - now)} ahead of this machine's clock); times are measured from that poll\n`);
  return end;
}

/** The database file a command reads (`--db`, else the configuration's `storage.path`); it must exist. */
export function storeLocation(source: StoreSource, ctx: CliContext): { path: string; config: Config | null } {
  const config = source.db !== undefined && source.config === undefined ? null : loadConfig({ path: source.config, env: ctx.env, uses: STORE_SECTIONS }).config;
  const path = source.db ?? sqlitePath((config as Config).storage);
  if (path !== ':memory:' && !existsSync(path)) throw storeNotFound(path);
  return { path, config };
}

/** Runs `body` on the store of the configuration (or `--db`), closed afterwards. */
export async function withStore(
  source: StoreSource,
  ctx: CliContext,
  body: (store: DataStore, now: number, extras: StoreExtras) => void | Promise<void>,
  options: StoreAccessOptions = {},
): Promise<void> {
  await withSqliteStore(source, ctx, body, options);
}

/** As withStore, for the commands that need SQLite's synchronous reads (`export`, `recordings verify`). */
export async function withSqliteStore(
  source: StoreSource,
  ctx: CliContext,
  body: (store: SqliteStore, now: number, extras: StoreExtras) => void | Promise<void>,
  options: StoreAccessOptions = {},
): Promise<void> {
  const { path, config } = storeLocation(source, ctx);
  const store = openStore(path, { readonly: !options.write });
  try {
    await body(store, await readingTime(store, Date.now(), ctx), { alerts: store.alerts, config });
  } finally {
    store.close();
  }
}
