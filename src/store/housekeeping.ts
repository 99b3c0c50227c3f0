/**
 * The store's upkeep while the daemon runs, done after poll cycles: pruning past retention (at
 * most every 10 minutes, in the background, in batches) and the check that SQLite's -wal file is
 * still the one the daemon opened.
 */
import { existsSync, statSync } from 'node:fs';
import type { Clock } from '../clock.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { CallsRepo } from '../domain/calls.js';
import { storeFailureCode, walMissingAdvice } from './errors.js';
import { pruneGradually } from './history/retention.js';
import type { TestCallsRepo } from '../domain/test-calls.js';
import type { Store } from '../domain/store.js';

export const PRUNE_EVERY_MS = 10 * 60_000;
/** Test-call attempts are kept at least this long: today's count against the caps. */
const TEST_CALLS_KEPT_MS = 2 * 86_400_000;

export interface Housekeeping {
  /** After a cycle: a prune when the last one started PRUNE_EVERY_MS ago or more and none is running. */
  pruneWhenDue(): void;
  /** After a cycle: says once (at error) that the -wal file was deleted or replaced under the daemon. */
  checkWal(): void;
  /** Waits for the prune in flight (it stops at its next batch once `signal` is aborted). */
  idle(): Promise<void>;
}

export function createHousekeeping(o: {
  store: Pick<Store, 'prune'>;
  /** The calls' repository when calls are stored (`calls:`), else null. */
  calls: Pick<CallsRepo, 'prune'> | null;
  /** The test calls' repository when test calls run, else null. */
  testCalls: Pick<TestCallsRepo, 'prune'> | null;
  retention: { rawMs: number; rollupMs: number };
  /** The SQLite file (':memory:' for none: in memory, or PostgreSQL). */
  dbPath: string;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
}): Housekeeping {
  const { clock, logger, retention, signal } = o;
  let lastPrune = 0;
  let pruning: Promise<void> | null = null;

  const prune = async (now: number): Promise<number> => {
    // 500 rows per statement, yielding between them: never blocks polling long.
    let deleted = await pruneGradually(o.store, now, retention, { signal });
    if (o.calls) deleted += await o.calls.prune(now - retention.rawMs, now - retention.rollupMs, 10_000);
    if (o.testCalls) deleted += await o.testCalls.prune(now - Math.max(retention.rawMs, TEST_CALLS_KEPT_MS));
    return deleted;
  };

  // The -wal file deleted under the running daemon: every other process then fails to read the
  // database with "disk I/O error" (and may re-create an empty -wal, so the file's identity is
  // what is checked). Said once, with what to do (docs/reliability.md).
  const dbPath = o.dbPath;
  const walPath = `${dbPath}-wal`;
  const walIdentity = (): number | null => (dbPath === ':memory:' || !existsSync(walPath) ? null : statSync(walPath).ino);
  let walIno: number | null = null;
  let walMissing = false;

  return {
    pruneWhenDue() {
      const now = clock.now();
      if (now - lastPrune < PRUNE_EVERY_MS || pruning !== null) return;
      lastPrune = now;
      pruning = prune(now)
        .then((deleted) => {
          if (deleted > 0) logger.info({ deleted }, 'pruned history past retention');
        })
        .catch((err: unknown) => {
          if (!signal.aborted) logger.error({ code: storeFailureCode(err), err: errorMessage(err) }, 'pruning failed; will try again later');
        })
        .finally(() => {
          pruning = null;
        });
    },
    checkWal() {
      if (dbPath === ':memory:' || !existsSync(dbPath)) return;
      const ino = walIdentity();
      walIno ??= ino;
      const missing = ino === null || ino !== walIno;
      if (missing && !walMissing) logger.error({ db: dbPath }, walMissingAdvice(dbPath));
      walMissing = missing;
    },
    async idle() {
      await pruning;
    },
  };
}

/** The SQLite file of a storage configuration, ':memory:' when there is none (PostgreSQL, or in memory). */
export function sqlitePathOf(storage: { path?: string; url?: string }): string {
  return storage.url === undefined ? (storage.path ?? ':memory:') : ':memory:';
}
