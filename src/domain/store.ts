/**
 * The Store API: what the poller writes and what the CLI and HTTP endpoints read (history, box
 * states, uptime). Implementation: better-sqlite3 (store/sqlite/), schema in migrations/. The
 * alert repositories' interfaces are owned by their consumers (src/alerts/repositories.ts,
 * src/domain/outbox.ts). Every method returns `Awaitable<T>`: SQLite (better-sqlite3) answers at
 * once, PostgreSQL (store/postgres/) with a Promise; callers always await. Code that needs
 * SQLite's synchronous answers (`boxwatch sql`'s table functions, `boxwatch export`) holds a
 * SqliteStore, never a Store. See docs/storage.md, "PostgreSQL".
 */
import type { Awaitable } from '../awaitable.js';
import type { BoxSnapshot } from './model.js';

export type Metric = 'battery' | 'signal' | 'connected' | 'firmware';
export const METRICS: readonly Metric[] = ['battery', 'signal', 'connected', 'firmware'];

/** Current state of a box as the store knows it. */
export interface BoxState extends BoxSnapshot {
  /** The account the box belongs to (src/box-id.ts; `serial` is its id, ACCOUNT/SERIAL outside "default"). */
  account: string;
  firstSeen: number;
  /** Last cycle in which the box was in the device list. */
  lastPolled: number;
  /** Set while the box is absent from the device list; null when present. */
  missingSince: number | null;
}

export type CycleOutcome = 'ok' | 'failed';

export interface CycleRecord {
  startedAt: number;
  durationMs: number;
  /** HTTP attempts made, retries included. */
  requests: number;
  outcome: CycleOutcome;
  /** GatewayError code (unauthorized, unavailable, schema, ...) when failed. */
  errorCode: string | null;
  /** Redacted error text when failed. */
  error: string | null;
  /** Boxes in the device list (0 for a failed cycle). */
  boxes: number;
  /** Device details fetched in this cycle. */
  detailsFetched: number;
  /** The account polled (src/box-id.ts); absent: "default", the single `gateway:`. */
  account?: string;
  /** Gateway records set aside this cycle as invalid, `serial: problem` (for alerts and metrics; not stored). */
  rejected?: readonly string[];
  /** Details not back by the cycle deadline (their boxes keep their previous details; not stored). */
  detailsSkipped?: number;
  /** The gateway's clock was off by more than the bound (ms), so its Date header was ignored; not stored. */
  gatewayClockSkewMs?: number | null;
}

/** Everything one poll cycle writes, in one transaction. */
export interface CycleWrite {
  cycle: CycleRecord;
  /** Every box in the device list this cycle, merged with the latest details. Empty when failed. */
  seen: BoxSnapshot[];
  /** Serials that were present before and are absent from the list now. */
  missing: string[];
}

export interface RawPoint {
  t: number;
  /** number for battery/signal, 0/1 for connected, string for firmware, null = reported as absent. */
  value: number | string | null;
  /**
   * End (exclusive) of the stretch during which the value held, when known: the next change, or
   * the start of a gap. Raw history points always carry it.
   */
  until?: number;
}

export interface RollupPoint {
  /** Start of the hour (or coarser bucket). */
  t: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  count: number;
}

export type HistoryResult =
  | { kind: 'raw'; metric: Metric; from: number; to: number; points: RawPoint[] }
  | { kind: 'rollup'; metric: Metric; from: number; to: number; bucketMs: number; points: RollupPoint[] };

export interface UptimeRow {
  serial: string;
  name: string;
  /** Fraction of observed time the box was connected, 0..1; null if never observed in the range. */
  connectedFraction: number | null;
  /** Milliseconds of the range covered by observations. */
  observedMs: number;
}

export interface HistoryOptions {
  maxPoints?: number;
  kind?: 'raw' | 'rollup';
}

/** What recording a cycle did with its start time (the clock may have stepped back). */
export interface RecordedCycle {
  /** The start time stored: the cycle's own, or 1 ms after its account's previous cycle when the clock went back. */
  startedAt: number;
  /** How far the cycle's own start was at or before its account's previous cycle's (ms); 0 normally. */
  clockBehindMs: number;
}

export interface Store {
  /** Records one cycle (one transaction). Each account's cycle times only move forward; see RecordedCycle. */
  recordCycle(write: CycleWrite): Awaitable<RecordedCycle>;
  /** The fleet: every box seen, except forgotten ones (forgetBoxes), by serial; of one account when given. */
  boxes(account?: string): Awaitable<BoxState[]>;
  /** One box, forgotten or not (its history stays readable). */
  box(serial: string): Awaitable<BoxState | undefined>;
  /**
   * The boxes leave the fleet (boxes(), so status, metrics, the API and alert evaluation) until the
   * gateway lists them again; their history stays. Returns how many were not forgotten already.
   */
  forgetBoxes(serials: readonly string[], now: number): Awaitable<number>;
  lastCycle(): Awaitable<CycleRecord | undefined>;
  /** The latest cycle of each account (src/box-id.ts), by account name. */
  lastCycles(): Awaitable<CycleRecord[]>;
  /** Value of a metric at time t, undefined when there is no data covering t (a gap). */
  valueAt(serial: string, metric: Metric, t: number): Awaitable<RawPoint | undefined>;
  /**
   * Raw points for short ranges, rollups for long ones, at most about maxPoints (default 500).
   * `kind` forces one form: 'raw' returns every raw point, 'rollup' buckets of at least an hour.
   */
  history(serial: string, metric: Metric, from: number, to: number, options?: HistoryOptions): Awaitable<HistoryResult>;
  uptime(from: number, to: number): Awaitable<UptimeRow[]>;
  /** Deletes data past retention in small batches, at most about `maxRows`; returns rows deleted. */
  prune(now: number, retention: { rawMs: number; rollupMs: number }, options?: { maxRows?: number }): Awaitable<number>;
  close(): Awaitable<void>;
}
