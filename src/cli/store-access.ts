/**
 * Opens the store for a command, and closes it afterwards: the SQLite file given with `--db`, else
 * the store the configuration names (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml; `storage.path`
 * or `storage.url`, opened by openDataStore, the daemon's way), of which only the sections the
 * read commands use must have their variables set (not the notifiers' secrets). Times are
 * measured from now, or from the database's last poll when that is later (a demo database, on
 * simulated time). A SQLite file is read-only by default (safe while the daemon runs: WAL);
 * `{ write: true }` opens it read-write (silences, acks); a database is never created here.
 * `boxwatch sql`, `export` and `backup` work on a SQLite file only: on PostgreSQL they say so
 * in one line, with what to use instead (`sqliteOnly`).
 */
import { Option } from 'commander';
import { formatDuration } from '../duration.js';
import { STORE_SECTIONS, loadConfig, type Config } from '../config/index.js';
import type { AlertQueries, SilenceWrites } from '../alerts/repositories.js';
import { ConfigError } from '../errors.js';
import { openDataStore, openSqliteFile, type DataStore, type SqliteStore } from '../store/index.js';
import { clockOf, type CliContext } from './context.js';
import { ambiguityMessage, resolveBoxId } from '../box-id.js';
import { UsageError } from '../errors.js';
import { terminalSafe } from './output.js';

export interface StoreSource {
  config?: string;
  db?: string;
  /** The configuration, read already (a writer checks its arguments against it before opening the store). */
  loaded?: Config;
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

/** The configuration a command reads (null when only `--db` was given). */
function configOf(source: StoreSource, ctx: CliContext): Config | null {
  if (source.loaded !== undefined) return source.loaded;
  return source.db !== undefined && source.config === undefined ? null : loadConfig({ path: source.config, env: ctx.env, uses: STORE_SECTIONS }).config;
}

/** Runs `body` on the store of the configuration (or `--db`), closed afterwards. */
export async function withStore(
  source: StoreSource,
  ctx: CliContext,
  body: (store: DataStore, now: number, extras: StoreExtras) => void | Promise<void>,
  options: StoreAccessOptions = {},
): Promise<void> {
  const config = configOf(source, ctx);
  const storage = source.db !== undefined ? { path: source.db } : (config as Config).storage;
  const store = await openDataStore(storage, { readonly: !options.write, mustExist: true });
  try {
    await body(store, await readingTime(store, clockOf(ctx).now(), ctx), { alerts: store.alerts, config });
  } finally {
    await store.close();
  }
}

/**
 * The SQLite file of a command that works on SQLite only (`--db`, else `storage.path`; it must
 * exist). On PostgreSQL (`storage.url`) a ConfigError (exit 2): one line naming the command and
 * what to use instead.
 */
export function sqliteOnly(command: string, source: StoreSource, ctx: CliContext, instead: string): { path: string; config: Config | null } {
  const config = configOf(source, ctx);
  if (source.db === undefined && config?.storage.url !== undefined) {
    const message = `boxwatch ${command} works on a SQLite file only and this configuration's store is PostgreSQL (storage.url): ${instead}`;
    throw new ConfigError([{ path: 'storage.url', message }], 'configuration', message);
  }
  return { path: source.db ?? (config as Config).storage.path ?? ':memory:', config };
}

/** As withStore, for `boxwatch export`, which needs SQLite's synchronous reads (see sqliteOnly). */
export async function withSqliteStore(
  command: string,
  source: StoreSource,
  ctx: CliContext,
  instead: string,
  body: (store: SqliteStore, now: number, extras: StoreExtras) => void | Promise<void>,
): Promise<void> {
  const { path, config } = sqliteOnly(command, source, ctx, instead);
  const store = openSqliteFile(path, { readonly: true });
  try {
    await body(store, await readingTime(store, clockOf(ctx).now(), ctx), { alerts: store.alerts, config });
  } finally {
    store.close();
  }
}

/**
 * The box a SERIAL argument names (src/box-id.ts): `ACCOUNT/SERIAL`, or a bare serial when one box
 * of all accounts has it; undefined when none has. A bare serial of several accounts is a usage
 * error (exit 2) naming them.
 */
export async function boxIdArgument(store: Pick<DataStore, 'box' | 'boxes'>, input: string): Promise<string | undefined> {
  if ((await store.box(input)) !== undefined) return input;
  const found = resolveBoxId(input, (await store.boxes()).map((b) => b.serial));
  if (found.kind === 'ambiguous') throw new UsageError(ambiguityMessage(terminalSafe(input), found.candidates.map(terminalSafe)));
  return found.kind === 'found' ? found.key : undefined;
}
