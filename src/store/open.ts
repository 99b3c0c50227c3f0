/**
 * Opens the configured store, for `boxwatch run` and for every CLI command that reads or writes
 * it: SQLite at `storage.path`, or PostgreSQL at `storage.url` (docs/storage.md). The URL holds a
 * password: it is never shown; the store's `name` is what messages and logs say.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../clock.js';
import type { StorageConfig } from '../config/index.js';
import type { Logger } from '../log.js';
import type { DataStore } from './data-store.js';
import { StoreError, storeNotFound } from './errors.js';
import { openStore, type SqliteStore } from './sqlite/store.js';

export interface OpenOptions {
  clock?: Clock;
  logger?: Logger;
  /** See StoreOptions.maxGapMs. */
  maxGapMs?: number;
  /** SQLite: see StoreOptions.rawRetentionMs (`storage.raw_retention`; the daemon's, for its writer). */
  rawRetentionMs?: number;
  /**
   * The CLI's reads: a SQLite file is opened read-only and must exist (it is never created or
   * migrated). A PostgreSQL database is opened as it is for the daemon (and brought up to date).
   */
  readonly?: boolean;
  /** A SQLite file must exist (the CLI never creates a database, not even to write a silence). */
  mustExist?: boolean;
  /** PostgreSQL: see PostgresOptions.idleInTransactionTimeoutMs (replicas pass half their lease). */
  idleInTransactionTimeoutMs?: number;
}

/** Opens the store `storage` names; StoreError when it cannot (a PostgreSQL failure names `storage.url` and what to check). */
export async function openDataStore(storage: Pick<StorageConfig, 'path' | 'url'>, options: OpenOptions = {}): Promise<DataStore> {
  if (storage.url === undefined) return openSqliteFile(storage.path ?? ':memory:', options);
  // Loaded only here: a daemon on SQLite never loads the PostgreSQL driver (test/perf/run-modules.test.ts).
  const { PostgresStore } = await import('./postgres/store.js');
  try {
    return await PostgresStore.open(storage.url, { clock: options.clock, logger: options.logger, maxGapMs: options.maxGapMs, idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'store_unavailable') {
      throw new StoreError('store_unavailable', `storage.url: ${err.message}; check that the server runs and that storage.url (e.g. $BOXWATCH_DATABASE_URL) names it, the user and the password`, { cause: err });
    }
    throw err;
  }
}

/** The SQLite store a configuration names, opened at once (an app created without a store: tests); PostgreSQL is opened by openDataStore. */
export function openSqliteOf(storage: Pick<StorageConfig, 'path' | 'url'>, options: OpenOptions = {}): SqliteStore {
  if (storage.url !== undefined) throw new Error('createApp: a PostgreSQL store (storage.url) is opened by openApp');
  return openSqliteFile(storage.path ?? ':memory:', options);
}

/** A SQLite file: read-only (it must exist), or read-write (created, with its folder, when missing). */
export function openSqliteFile(path: string, options: OpenOptions = {}): SqliteStore {
  const memory = path === ':memory:';
  if ((options.readonly === true || options.mustExist === true) && !memory && !existsSync(path)) throw storeNotFound(path);
  if (options.readonly !== true && !memory) mkdirSync(dirname(path), { recursive: true });
  return openStore(path, { clock: options.clock, logger: options.logger, maxGapMs: options.maxGapMs, rawRetentionMs: options.rawRetentionMs, readonly: options.readonly });
}
