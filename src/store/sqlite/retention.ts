/**
 * Retention of the SQLite store: raw sample rows older than the raw retention, rollups and cycles
 * older than the rollup retention, and finished alert history (delivered or dead outbox rows,
 * transitions, ended silences) older than the rollup retention. Deletes go in statements of at
 * most 500 rows, each its own transaction, so other connections and the next cycle get the
 * database between them; `pruneGradually` also yields to the event loop between batches, so a
 * daemon with a large backlog keeps polling and answering HTTP while it is deleted.
 */
import type Database from 'better-sqlite3';
import { HOUR_MS, hourOf } from '../codec.js';
import { PRUNE_BATCH, RAW_PRUNED_BEFORE, type Statements } from './rows.js';

/** Raw retention shorter than this is taken as this. */
const MIN_RAW_RETENTION_MS = 2 * HOUR_MS;

export interface RetentionMs {
  rawMs: number;
  rollupMs: number;
}

export interface PruneOptions {
  /** Stop after about this many rows (the caller yields and calls again). Default: no limit. */
  maxRows?: number;
}

export class Retention {
  private readonly alertPrunes: Database.Statement[];

  constructor(
    private readonly s: Statements,
    db: Database.Database,
    /** The hour being written: its rows stay whatever the setting. */
    private readonly openHour: () => number | null,
  ) {
    this.alertPrunes = [
      db.prepare(`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE status IN ('delivered', 'dead') AND done_at < ? LIMIT ${PRUNE_BATCH})`),
      db.prepare(`DELETE FROM alert_transitions WHERE id IN (SELECT id FROM alert_transitions WHERE at < ? LIMIT ${PRUNE_BATCH})`),
      db.prepare(`DELETE FROM silences WHERE id IN (SELECT id FROM silences WHERE ends_at < ? LIMIT ${PRUNE_BATCH})`),
      db.prepare(`DELETE FROM acks WHERE id IN (SELECT id FROM acks WHERE at < ? LIMIT ${PRUNE_BATCH})`),
    ];
  }

  /**
   * Deletes what is past retention, at most about `maxRows` rows (then returns; call again). Returns
   * the rows deleted: fewer than `maxRows` means done. Raw retention under 2 hours counts as 2 hours.
   */
  prune(now: number, retention: RetentionMs, options: PruneOptions = {}): number {
    const s = this.s;
    const budget = options.maxRows ?? Infinity;
    let deleted = 0;
    let rawHour = hourOf(now - Math.max(retention.rawMs, MIN_RAW_RETENTION_MS));
    const open = this.openHour();
    if (open !== null) rawHour = Math.min(rawHour, open);
    const rollupHour = hourOf(now - retention.rollupMs);
    const drain = (stmt: Database.Statement, ...args: number[]): boolean => {
      for (;;) {
        if (deleted >= budget) return false;
        const n = stmt.run(...args).changes;
        deleted += n;
        if (n < PRUNE_BATCH) return true;
      }
    };
    if (!drain(s.pruneSamples, rawHour)) return deleted;
    const prunedBefore = s.getMeta.get(RAW_PRUNED_BEFORE) as string | undefined;
    if (prunedBefore === undefined || rawHour * HOUR_MS > Number(prunedBefore)) s.setMeta.run(RAW_PRUNED_BEFORE, String(rawHour * HOUR_MS));
    for (const id of s.boxIds.all() as number[]) if (!drain(s.pruneRollups, id, id, rollupHour)) return deleted;
    if (!drain(s.pruneCycles, now - retention.rollupMs)) return deleted;
    for (const stmt of this.alertPrunes) if (!drain(stmt, now - retention.rollupMs)) return deleted;
    return deleted;
  }
}

/**
 * Prunes in steps of about `batch` rows, yielding to the event loop between them so that a
 * daemon keeps polling while a large backlog is deleted. Returns the rows deleted.
 */
export async function pruneGradually(
  store: { prune(now: number, retention: RetentionMs, options?: PruneOptions): number },
  now: number,
  retention: RetentionMs,
  options: { batch?: number; signal?: AbortSignal } = {},
): Promise<number> {
  const batch = options.batch ?? PRUNE_BATCH;
  let total = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const n = store.prune(now, retention, { maxRows: batch });
    total += n;
    if (n < batch) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
