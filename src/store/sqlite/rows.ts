/**
 * The SQLite history's statements, prepared once, and its answers to the history reads
 * (SqliteHistoryRows: the reads of src/store/history/reader.ts, answered at once). Row shapes and
 * statistics shared with PostgreSQL are in src/store/history/rows.ts.
 */
import type Database from 'better-sqlite3';
import type { HistoryRows } from '../history/reader.js';
import { PRUNE_BATCH, RAW_PRUNED_BEFORE, rollupBucketsSql, type BoxRefRow, type RollupBucketRow, type RollupRow, type SampleRow } from '../history/rows.js';

/**
 * A box's last poll. The cycle does not write it into every listed box's row (10,000 rows a cycle
 * that would change for that alone): while a box's segment is open (`seg_start` set) its account's
 * latest cycle listed it (src/store/history/writer.ts, HistoryPlan.seen), so that cycle's start is
 * its last poll; a row whose segment is closed holds its own, written when the segment ended. A
 * database written before (every row holding its last poll) reads the same: its rows with an open
 * segment hold their account's latest cycle. The stable view v_boxes reads it so too (migration 0018).
 */
export const LAST_POLLED = `CASE WHEN seg_start IS NULL THEN last_polled
  ELSE coalesce((SELECT max(c.started_at) FROM cycles c WHERE c.account = boxes.account), last_polled) END`;

/** The columns of a `boxes` row as read (BoxRow), its last poll included. */
const BOX_ROW = `id, serial, gateway_id, name, connected, battery, signal, firmware, last_seen, registered_at, location, ip, details_at,
  first_seen, ${LAST_POLLED} AS last_polled, missing_since, seg_start, forgotten_at, account`;
const BOX_REF = `id, serial, name, seg_start, ${LAST_POLLED} AS last_polled, first_seen`;

/**
 * Each account's latest cycle start (`account`, `t`) by probes of the (account, started_at) key,
 * one account after the other: a GROUP BY would read every cycle kept.
 */
const ACCOUNTS_LATEST = `WITH RECURSIVE a (account) AS (
    SELECT min(account) FROM cycles
    UNION ALL SELECT (SELECT min(account) FROM cycles WHERE account > a.account) FROM a WHERE a.account IS NOT NULL)
  SELECT account, (SELECT max(started_at) FROM cycles m WHERE m.account = a.account) AS t FROM a WHERE account IS NOT NULL`;

/** Every history statement the store runs, prepared once. */
export function prepareStatements(db: Database.Database) {
  const p = (sql: string): Database.Statement => db.prepare(sql);
  return {
    insertCycle: p('INSERT INTO cycles (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    lastCycle: p('SELECT * FROM cycles ORDER BY started_at DESC LIMIT 1'),
    cycleStarts: p('SELECT started_at FROM cycles WHERE account = ? AND started_at >= ? AND started_at < ? ORDER BY started_at').pluck(),
    lastCycles: p(ACCOUNTS_LATEST),
    lastCycleOfEach: p(`SELECT c.* FROM (${ACCOUNTS_LATEST}) a JOIN cycles c ON c.account = a.account AND c.started_at = a.t ORDER BY c.account`),
    insertBox: p(
      `INSERT INTO boxes (id, serial, gateway_id, name, connected, battery, signal, firmware, last_seen, registered_at, location, ip,
         details_at, first_seen, last_polled, missing_since, seg_start, account) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
    ),
    updateBox: p(
      `UPDATE boxes SET gateway_id = ?, name = ?, connected = ?, battery = ?, signal = ?, firmware = ?, last_seen = ?,
         registered_at = ?, location = ?, ip = ?, details_at = ?, last_polled = ?, missing_since = NULL, forgotten_at = NULL, seg_start = ? WHERE id = ?`,
    ),
    closeSegment: p('UPDATE boxes SET seg_start = NULL, last_polled = ? WHERE id = ?'),
    markMissing: p('UPDATE boxes SET missing_since = coalesce(missing_since, ?) WHERE serial = ?'),
    allBoxes: p(`SELECT ${BOX_ROW} FROM boxes ORDER BY serial`),
    /** Changes when another connection commits (SQLite's PRAGMA data_version). */
    dataVersion: p('PRAGMA data_version').pluck(),
    /** The fleet: every box not forgotten. */
    fleetBoxes: p(`SELECT ${BOX_ROW} FROM boxes WHERE forgotten_at IS NULL ORDER BY serial`),
    forgetBox: p('UPDATE boxes SET forgotten_at = ? WHERE serial = ? AND forgotten_at IS NULL'),
    box: p(`SELECT ${BOX_ROW} FROM boxes WHERE serial = ?`),
    boxRef: p(`SELECT ${BOX_REF} FROM boxes WHERE serial = ?`),
    boxRefs: p(`SELECT ${BOX_REF} FROM boxes ORDER BY serial`),
    sample: p('SELECT data FROM samples WHERE hour = ? AND box_id = ?').pluck(),
    samplesOfHour: p('SELECT hour, box_id, data FROM samples WHERE hour = ?'),
    firstSampleHour: p('SELECT min(hour) FROM samples').pluck(),
    okCycleStarts: p("SELECT started_at FROM cycles WHERE outcome = 'ok' AND started_at >= ? AND started_at < ? ORDER BY started_at").pluck(),
    okCycleStartsOf: p("SELECT started_at FROM cycles WHERE outcome = 'ok' AND started_at >= ? AND started_at < ? AND account = ? ORDER BY started_at").pluck(),
    samplesFrom: p('SELECT hour, box_id, data FROM samples WHERE hour >= ?'),
    upsertSample: p('INSERT INTO samples (hour, box_id, data) VALUES (?, ?, ?) ON CONFLICT (hour, box_id) DO UPDATE SET data = excluded.data'),
    upsertRollup: p(
      `INSERT OR REPLACE INTO rollups (box_id, hour, polls, observed_ms, disconnected_ms, battery_gap_ms, battery_min, battery_max,
         battery_mean_milli, signal_gap_ms, signal_min, signal_max, signal_mean_milli) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    rollupBucketsOfBox: p(rollupBucketsSql((name) => `@${name}`)),
    uptimeOfBox: p('SELECT sum(observed_ms) AS observed, sum(disconnected_ms) AS disconnected FROM rollups WHERE box_id = ? AND hour >= ? AND hour < ?'),
    rollupOf: p('SELECT * FROM rollups WHERE box_id = ? AND hour = ?'),
    insertString: p('INSERT INTO strings (id, value) VALUES (?, ?)'),
    stringOf: p('SELECT value FROM strings WHERE id = ?').pluck(),
    allStrings: p('SELECT id, value FROM strings'),
    getMeta: p('SELECT value FROM meta WHERE key = ?').pluck(),
    setMeta: p('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    pruneSamples: p(`DELETE FROM samples WHERE (hour, box_id) IN (SELECT hour, box_id FROM samples WHERE hour < ? LIMIT ${PRUNE_BATCH})`),
    pruneRollups: p(`DELETE FROM rollups WHERE box_id = ? AND hour IN (SELECT hour FROM rollups WHERE box_id = ? AND hour < ? LIMIT ${PRUNE_BATCH})`),
    // Each account's latest cycle is kept: it is the last poll of the account's boxes whose segment is open (LAST_POLLED).
    pruneCycles: p(
      `DELETE FROM cycles WHERE (account, started_at) IN (SELECT account, started_at FROM cycles c WHERE started_at < ?
         AND started_at < (SELECT max(l.started_at) FROM cycles l WHERE l.account = c.account) LIMIT ${PRUNE_BATCH})`,
    ),
    boxIds: p('SELECT id FROM boxes ORDER BY id').pluck(),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

/**
 * The history reads on SQLite, answered at once. A box's rows are read hour by hour: `samples` is
 * keyed by hour first, so each is one lookup, and a range of one box is not a contiguous range.
 */
export class SqliteHistoryRows implements HistoryRows {
  /** Interned strings, cached (they never change once written); reloaded when an unknown id is met. */
  private readonly names = new Map<number, string>();

  constructor(private readonly s: Statements) {}

  boxRef(serial: string): BoxRefRow | undefined {
    return this.s.boxRef.get(serial) as BoxRefRow | undefined;
  }

  boxRefs(): BoxRefRow[] {
    return this.s.boxRefs.all() as BoxRefRow[];
  }

  samplesOfBox(boxId: number, fromHour: number, toHour: number): SampleRow[] {
    const out: SampleRow[] = [];
    for (let hour = fromHour; hour <= toHour; hour++) {
      const data = this.s.sample.get(hour, boxId) as Buffer | undefined;
      if (data !== undefined) out.push({ hour, box_id: boxId, data });
    }
    return out;
  }

  samplesOfHours(hours: readonly number[]): SampleRow[] {
    return hours.flatMap((h) => this.s.samplesOfHour.all(h) as SampleRow[]);
  }

  rollupBucketsOfBox(boxId: number, fromHour: number, toHour: number, bucketH: number): RollupBucketRow[] {
    return this.s.rollupBucketsOfBox.all({ bucketH, box: boxId, from: fromHour, to: toHour }) as RollupBucketRow[];
  }

  rollupsAt(pairs: readonly { boxId: number; hour: number }[]): RollupRow[] {
    return pairs.flatMap((p) => (this.s.rollupOf.get(p.boxId, p.hour) as RollupRow | undefined) ?? []);
  }

  uptimeSums(boxIds: readonly number[], fromHour: number, toHour: number): { box_id: number; observed: number; disconnected: number }[] {
    return boxIds.map((id) => {
      const sum = this.s.uptimeOfBox.get(id, fromHour, toHour) as { observed: number | null; disconnected: number | null };
      return { box_id: id, observed: sum.observed ?? 0, disconnected: sum.disconnected ?? 0 };
    });
  }

  lastCyclesOfAccounts(): { account: string; t: number }[] {
    return this.s.lastCycles.all() as { account: string; t: number }[];
  }

  cycleStarts(from: number, to: number, account: string): number[] {
    return this.s.cycleStarts.all(account, from, to) as number[];
  }

  rawPrunedBefore(): number {
    const v = this.s.getMeta.get(RAW_PRUNED_BEFORE) as string | undefined;
    return v === undefined ? -Infinity : Number(v);
  }

  strings(ids: readonly number[]): Map<number, string> {
    const out = new Map<number, string>();
    for (const id of ids) {
      let name = this.names.get(id);
      if (name === undefined) {
        name = this.s.stringOf.get(id) as string | undefined;
        if (name !== undefined) this.names.set(id, name);
      }
      if (name !== undefined) out.set(id, name);
    }
    return out;
  }
}
