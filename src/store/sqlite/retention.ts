/**
 * Retention of the SQLite store (where it cuts: src/store/history/retention.ts): raw sample rows,
 * rollups and cycles, and finished alert history (delivered or dead outbox rows, transitions,
 * ended silences, acks). Deletes go in statements of at most 500 rows, each its own transaction,
 * so other connections and the next cycle get the database between them.
 */
import type Database from 'better-sqlite3';
import { HOUR_MS } from '../codec.js';
import { cutoffs, type PruneOptions, type RetentionMs } from '../history/retention.js';
import { PRUNE_BATCH, RAW_PRUNED_BEFORE } from '../history/rows.js';
import type { Statements } from './rows.js';

export class Retention {
  private readonly alertPrunes: Database.Statement[];

  constructor(
    private readonly s: Statements,
    db: Database.Database,
    /** Each account's latest cycle: the hours being written stay whatever the setting (cutoffs). */
    private readonly lastCycles: () => readonly { account: string; t: number }[],
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
   * the rows deleted: fewer than `maxRows` means done.
   */
  prune(now: number, retention: RetentionMs, options: PruneOptions = {}): number {
    const s = this.s;
    const budget = options.maxRows ?? Infinity;
    let deleted = 0;
    const cut = cutoffs(now, retention, this.lastCycles());
    const drain = (stmt: Database.Statement, ...args: number[]): boolean => {
      for (;;) {
        if (deleted >= budget) return false;
        const n = stmt.run(...args).changes;
        deleted += n;
        if (n < PRUNE_BATCH) return true;
      }
    };
    if (!drain(s.pruneSamples, cut.rawHour)) return deleted;
    const prunedBefore = s.getMeta.get(RAW_PRUNED_BEFORE) as string | undefined;
    if (prunedBefore === undefined || cut.rawHour * HOUR_MS > Number(prunedBefore)) s.setMeta.run(RAW_PRUNED_BEFORE, String(cut.rawHour * HOUR_MS));
    for (const id of s.boxIds.all() as number[]) if (!drain(s.pruneRollups, id, id, cut.rollupHour)) return deleted;
    if (!drain(s.pruneCycles, cut.before)) return deleted;
    for (const stmt of this.alertPrunes) if (!drain(stmt, cut.before)) return deleted;
    return deleted;
  }
}
