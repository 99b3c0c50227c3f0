/**
 * Opens the store for a command, and closes it afterwards: the database given with `--db`, else
 * the one the configuration names (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml).
 * Read-only by default: safe while the daemon runs (SQLite WAL). `{ write: true }` opens the
 * existing database read-write (silences); it never creates one.
 */
import { existsSync } from 'node:fs';
import { Option } from 'commander';
import { loadConfig, type Config } from '../config/index.js';
import type { AlertQueries, SilenceWrites } from '../alerts/repositories.js';
import { StoreError } from '../store/errors.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
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

export async function withStore(
  source: StoreSource,
  ctx: CliContext,
  body: (store: Store, now: number, extras: StoreExtras) => void | Promise<void>,
  options: StoreAccessOptions = {},
): Promise<void> {
  const config = source.db !== undefined && source.config === undefined ? null : loadConfig({ path: source.config, env: ctx.env }).config;
  const path = source.db ?? (config as Config).storage.path;
  if (options.write && path !== ':memory:' && !existsSync(path)) {
    throw new StoreError('store_not_found', `no database at ${path} (start the daemon with \`boxwatch run\` first, or pass --config/--db)`);
  }
  const store = openStore(path, { readonly: !options.write });
  try {
    await body(store, Date.now(), { alerts: store.alerts, config });
  } finally {
    store.close();
  }
}
