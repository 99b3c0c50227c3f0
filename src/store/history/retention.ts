/**
 * Retention, for every database: what is past it (raw sample rows of hours older than the raw
 * retention, never the open hour of an account still polled; rollups, cycles and finished alert history older than the
 * rollup retention), and pruning in batches that yield to the event loop in between, so a daemon
 * with a large backlog keeps polling and answering HTTP while it is deleted. The deletes are the
 * store's (src/store/sqlite/retention.ts, src/store/postgres/history.ts).
 */
import type { Awaitable } from '../../awaitable.js';
import { HOUR_MS, hourOf } from '../codec.js';
import { PRUNE_BATCH } from './rows.js';

/** Raw retention shorter than this is taken as this. */
const MIN_RAW_RETENTION_MS = 2 * HOUR_MS;
/** The raw retention of a store told none: the configuration's default (`storage.raw_retention`, 14 days). */
export const DEFAULT_RAW_RETENTION_MS = 14 * 24 * HOUR_MS;

/**
 * The open hour of each account still polled: the hour of its latest cycle, whose rows wait for
 * the account's next cycle to be rolled up (its earlier hours are closed). The accounts still
 * polled are those whose latest cycle is within the raw retention (`rawMs`, at least 2 hours) of
 * the newest cycle of any account. An account polled longer ago while others were polled (removed
 * from `gateways:`, or renamed; the cycle that retired it closed its hour, CycleWriter.retire) has
 * no next cycle to wait for, so no open hour. A daemon stopped for longer than the raw retention
 * keeps its open hours: all its accounts' latest cycles are equally old.
 *
 * The one definition of the open hours: the SQLite writer loads each box's rows from its account's
 * (src/store/sqlite/writer.ts), and retention keeps the raw rows of the oldest one (`openHourOf`).
 * The history queries need no retention: they read from each account's latest hour (`lastHoursOf`).
 */
export function openHoursOf(lastCycles: readonly { account: string; t: number }[], rawMs: number): Map<string, number> {
  if (lastCycles.length === 0) return new Map();
  const newest = Math.max(...lastCycles.map((c) => c.t));
  const polledWithin = Math.max(rawMs, MIN_RAW_RETENTION_MS);
  return lastHoursOf(lastCycles.filter((c) => c.t >= newest - polledWithin));
}

/**
 * The hour of each account's latest cycle: the earliest hour of its boxes that may have no rollup
 * (its open hour, or the last hour of an account no longer polled). The history queries read a
 * box's hours raw from its account's on and the earlier ones from their rollups; where the raw
 * rows are gone (pruned past the raw retention) the hour's rollup stands in (written when the
 * account's hour closed, or when it was retired). So their answers need no raw retention: the
 * same for the daemon and for `boxwatch uptime --db` without a configuration
 * (src/store/history/reader.ts).
 */
export function lastHoursOf(lastCycles: readonly { account: string; t: number }[]): Map<string, number> {
  return new Map(lastCycles.map((c) => [c.account, hourOf(c.t)]));
}

/**
 * The oldest open hour (`openHoursOf`): every hour from it on may still be open for some account.
 * Retention keeps its raw rows (`cutoffs`). Null: no cycle.
 */
export function openHourOf(lastCycles: readonly { account: string; t: number }[], rawMs: number): number | null {
  const hours = [...openHoursOf(lastCycles, rawMs).values()];
  return hours.length === 0 ? null : Math.min(...hours);
}

export interface RetentionMs {
  rawMs: number;
  rollupMs: number;
}

export interface PruneOptions {
  /** Stop after about this many rows (the caller yields and calls again). Default: no limit. */
  maxRows?: number;
}

/** Where retention cuts, at `now`. */
export interface Cutoffs {
  /** Sample rows of hours before this go (never the open hour). */
  rawHour: number;
  /** Rollups of hours before this go. */
  rollupHour: number;
  /** Cycles and finished alert history before this time (ms) go. */
  before: number;
}

/**
 * Where retention cuts at `now`, given each account's latest cycle (the store's `lastCycles`);
 * raw retention under 2 hours counts as 2 hours. Raw rows of the open hours stay (`openHourOf`:
 * of the accounts still polled). An account no longer polled keeps its latest cycle (a box's last
 * poll is derived from it) but holds no raw row of the fleet back.
 */
export function cutoffs(now: number, retention: RetentionMs, lastCycles: readonly { account: string; t: number }[]): Cutoffs {
  const rawMs = Math.max(retention.rawMs, MIN_RAW_RETENTION_MS);
  const rawHour = hourOf(now - rawMs);
  const openHour = openHourOf(lastCycles, rawMs);
  return {
    rawHour: openHour === null ? rawHour : Math.min(rawHour, openHour),
    rollupHour: hourOf(now - retention.rollupMs),
    before: now - retention.rollupMs,
  };
}

/**
 * Runs `batch` (one delete of at most `size` rows, returning how many went) until fewer than
 * `size` went or `budget` rows are spent; false when stopped by the budget.
 */
export async function drainAwaitable(batch: () => Awaitable<number>, size: number, spent: { rows: number; budget: number }): Promise<boolean> {
  for (;;) {
    if (spent.rows >= spent.budget) return false;
    const n = await batch();
    spent.rows += n;
    if (n < size) return true;
  }
}

/**
 * Prunes in steps of about `batch` rows, yielding to the event loop between them so that a
 * daemon keeps polling while a large backlog is deleted. Returns the rows deleted.
 */
export async function pruneGradually(
  store: { prune(now: number, retention: RetentionMs, options?: PruneOptions): Awaitable<number> },
  now: number,
  retention: RetentionMs,
  options: { batch?: number; signal?: AbortSignal } = {},
): Promise<number> {
  const batch = options.batch ?? PRUNE_BATCH;
  let total = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const n = await store.prune(now, retention, { maxRows: batch });
    total += n;
    if (n < batch) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
