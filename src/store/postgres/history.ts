/**
 * The fleet history on PostgreSQL (`boxes`, `cycles`, `samples`, `rollups`, `strings`, `meta`;
 * migrations/postgres/0002_history.sql): the same writer and queries as SQLite
 * (src/store/history/), with PostgreSQL's reads and writes. A cycle's plan is written in a few
 * statements whatever the fleet's size (arrays through `unnest`), so a cycle costs a handful of
 * round trips; a query asks for a box's range of rows at once.
 */
import type { CycleScope } from '../../alerts/repositories.js';
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import { HOUR_MS, hourOf } from '../codec.js';
import { HistoryQueries, runLater, type HistoryRows } from '../history/reader.js';
import { cutoffs, drainAwaitable, type PruneOptions, type RetentionMs } from '../history/retention.js';
import { PRUNE_BATCH, RAW_PRUNED_BEFORE, ROLLUP_COLUMNS, rollupBucketsSql, toBoxState, toCycleRecord, type BoxRefRow, type BoxRow, type CycleRow, type RollupBucketRow, type RollupRow, type SampleRow } from '../history/rows.js';
import { BOX_COLUMNS, CycleWriter, boxValues, closedHoursOf, rollupsOf, type BoxWrite, type HistoryPlan } from '../history/writer.js';
import type { BoxState, CycleRecord, CycleWrite, HistoryOptions, HistoryResult, Metric, RawPoint, RecordedCycle, UptimeRow } from '../../domain/store.js';
import type { PostgresDatabase, Transaction } from './database.js';
import { scopeSql } from './scope.js';

/** PostgreSQL types of BOX_COLUMNS, for `unnest`. */
const BOX_TYPES = ['bigint', 'text', 'integer', 'integer', 'integer', 'text', 'bigint', 'bigint', 'text', 'text', 'bigint'];
const ROLLUP_TYPES = ['bigint', 'integer', 'integer', 'bigint', 'bigint', 'bigint', 'integer', 'integer', 'bigint', 'bigint', 'integer', 'integer', 'bigint'];
/** rollupBucketsSql with PostgreSQL's parameters; its sums (numeric in PostgreSQL) read back as bigint, hence numbers. */
const ROLLUP_BUCKETS = rollupBucketsSql((name) => ({ bucketH: '$1::integer', box: '$2::bigint', from: '$3::integer', to: '$4::integer' })[name], (e) => `sum(${e})::bigint`);
const BOX_REF = 'SELECT id, serial, name, seg_start, last_polled, first_seen FROM boxes';

/** `unnest($1::t1[], $2::t2[], ...)` over the given types, numbered from `first`. */
function unnest(types: readonly string[], first = 1): string {
  return `unnest(${types.map((t, i) => `$${first + i}::${t}[]`).join(', ')})`;
}

/** Column arrays of rows given as value arrays (what `unnest` takes). */
function columnsOf(rows: readonly (readonly unknown[])[], width: number): unknown[][] {
  const cols: unknown[][] = Array.from({ length: width }, () => []);
  for (const row of rows) for (let i = 0; i < width; i++) (cols[i] as unknown[]).push(row[i]);
  return cols;
}

/**
 * Writes sent as one statement: each a data-modifying WITH clause, `#` standing for its next
 * parameter (numbered when the statement is built). One round trip for the whole cycle.
 */
class Writes {
  private readonly parts: string[] = [];
  private readonly params: unknown[] = [];

  add(sql: string, params: readonly unknown[]): void {
    let n = this.params.length;
    this.parts.push(sql.replace(/#/g, () => `$${++n}`));
    this.params.push(...params);
    if (n !== this.params.length) throw new Error(`Writes.add: ${params.length} parameters for ${n - this.params.length + params.length} placeholders`);
  }

  async run(tx: Transaction): Promise<void> {
    if (this.parts.length === 0) return;
    await tx.query(`WITH ${this.parts.map((p, i) => `w${i} AS (${p})`).join(', ')} SELECT 1`, this.params);
  }
}

/** The history reads, answered by PostgreSQL (on the pool, or in a transaction). */
class PostgresHistoryRows implements HistoryRows {
  /** Interned strings, cached (they never change once written). */
  private readonly names = new Map<number, string>();

  constructor(private readonly db: Transaction) {}

  async boxRef(serial: string): Promise<BoxRefRow | undefined> {
    return (await this.db.query<BoxRefRow>(`${BOX_REF} WHERE serial = $1`, [serial]))[0];
  }

  boxRefs(): Promise<BoxRefRow[]> {
    return this.db.query<BoxRefRow>(`${BOX_REF} ORDER BY serial COLLATE "C"`);
  }

  samplesOfBox(boxId: number, fromHour: number, toHour: number): Promise<SampleRow[]> {
    return this.db.query<SampleRow>('SELECT hour, box_id, data FROM samples WHERE box_id = $1 AND hour >= $2 AND hour <= $3', [boxId, fromHour, toHour]);
  }

  samplesOfHours(hours: readonly number[]): Promise<SampleRow[]> {
    return this.db.query<SampleRow>('SELECT hour, box_id, data FROM samples WHERE hour = ANY($1::integer[])', [hours]);
  }

  rollupBucketsOfBox(boxId: number, fromHour: number, toHour: number, bucketH: number): Promise<RollupBucketRow[]> {
    return this.db.query<RollupBucketRow>(ROLLUP_BUCKETS, [bucketH, boxId, fromHour, toHour]);
  }

  rollupsAt(pairs: readonly { boxId: number; hour: number }[]): Promise<RollupRow[]> {
    return this.db.query<RollupRow>('SELECT r.* FROM rollups r JOIN unnest($1::bigint[], $2::integer[]) AS p (box_id, hour) ON r.box_id = p.box_id AND r.hour = p.hour', [
      pairs.map((p) => p.boxId),
      pairs.map((p) => p.hour),
    ]);
  }

  uptimeSums(boxIds: readonly number[], fromHour: number, toHour: number): Promise<{ box_id: number; observed: number; disconnected: number }[]> {
    return this.db.query(
      'SELECT box_id, sum(observed_ms)::bigint AS observed, sum(disconnected_ms)::bigint AS disconnected FROM rollups WHERE box_id = ANY($1::bigint[]) AND hour >= $2 AND hour < $3 GROUP BY box_id',
      [boxIds, fromHour, toHour],
    );
  }

  /** Start of the latest cycle of the account, or null. */
  async lastCycleOf(account: string): Promise<number | null> {
    return (await this.db.query<{ t: number | null }>('SELECT max(started_at) AS t FROM cycles WHERE account = $1', [account]))[0]?.t ?? null;
  }

  /** Start of the latest cycle of each account. */
  lastCyclesOfAccounts(): Promise<{ account: string; t: number }[]> {
    return this.db.query<{ account: string; t: number }>('SELECT account, max(started_at) AS t FROM cycles GROUP BY account');
  }

  async cycleStarts(from: number, to: number, account: string): Promise<number[]> {
    return (await this.db.query<{ t: number }>('SELECT started_at AS t FROM cycles WHERE account = $3 AND started_at >= $1 AND started_at < $2 ORDER BY started_at', [from, to, account])).map((r) => r.t);
  }

  async rawPrunedBefore(): Promise<number> {
    const [row] = await this.db.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [RAW_PRUNED_BEFORE]);
    return row === undefined ? -Infinity : Number(row.value);
  }

  async strings(ids: readonly number[]): Promise<Map<number, string>> {
    const missing = ids.filter((id) => !this.names.has(id));
    if (missing.length > 0) for (const r of await this.db.query<{ id: number; value: string }>('SELECT id, value FROM strings WHERE id = ANY($1::integer[])', [missing])) this.names.set(r.id, r.value);
    return new Map(ids.flatMap((id) => (this.names.has(id) ? [[id, this.names.get(id) as string] as const] : [])));
  }
}

/**
 * The ids of these strings, interning those not yet in `strings` (the sequence numbers them; a
 * string another process interns at the same time is waited for, then read).
 */
async function internStrings(tx: Transaction, values: readonly string[]): Promise<{ id: number; value: string }[]> {
  if (values.length === 0) return [];
  await tx.query('INSERT INTO strings (value) SELECT unnest($1::text[]) ON CONFLICT (value) DO NOTHING', [values]);
  return tx.query<{ id: number; value: string }>('SELECT id, value FROM strings WHERE value = ANY($1::text[])', [values]);
}

export class PostgresHistory {
  private readonly writer: CycleWriter;
  /** The accounts whose part the writer holds (loaded at their first cycle here). */
  private readonly accounts = new Set<string>();
  private readonly rows: PostgresHistoryRows;
  private readonly queries: HistoryQueries;

  constructor(
    private readonly db: PostgresDatabase,
    maxGapMs: number,
  ) {
    this.writer = new CycleWriter(maxGapMs);
    this.rows = new PostgresHistoryRows(db);
    this.queries = new HistoryQueries(maxGapMs);
  }

  // ---------------------------------------------------------------- writing (in the caller's transaction)

  /**
   * Records one cycle in `tx` (one at a time: the caller serializes them). If `tx` rolls back, the
   * caller calls `reset()`. Box and string ids come from the database's sequences, so that other
   * processes writing other accounts (replicas) never give the same. The account's part of the
   * writer's state is loaded at its first cycle here, and again when another process recorded a
   * cycle of it since this writer did (its leadership moved); the other accounts' parts stay.
   */
  async record(tx: Transaction, write: CycleWrite): Promise<RecordedCycle> {
    const account = write.cycle.account ?? DEFAULT_ACCOUNT;
    await this.loaded(tx, account);
    const strings = this.writer.newStrings(write);
    if (strings.length > 0) this.writer.addStrings(await internStrings(tx, strings));
    const serials = this.writer.newSerials(write);
    const ids = serials.length === 0 ? [] : (await tx.query<{ id: number }>("SELECT nextval('boxes_id_seq') AS id FROM generate_series(1, $1)", [serials.length])).map((r) => Number(r.id));
    const plan = this.writer.record(write, ids);
    await this.apply(tx, plan);
    return plan.recorded;
  }

  /**
   * Closes the open hours of accounts no longer configured (CycleWriter.retire), in the retiring
   * cycle's `tx`: their state is loaded first (another replica may have led them).
   */
  async retire(tx: Transaction, accounts: readonly string[], now: number): Promise<void> {
    if (accounts.length === 0) return;
    for (const account of accounts) await this.loaded(tx, account);
    const plan = this.writer.retire(accounts, now);
    const w = new Writes();
    if (plan.closed.length > 0) w.add('UPDATE boxes SET seg_start = NULL WHERE id = ANY(#::bigint[])', [plan.closed.map((c) => c.id)]);
    addSamples(w, plan.samples);
    await w.run(tx);
    await this.writeRollups(tx, plan);
  }

  /** The writer loaded, with `account`'s part as stored (read again when another process recorded the account since). */
  private async loaded(tx: Transaction, account: string): Promise<void> {
    if (!this.writer.loaded) await this.load(tx);
    const stored = await this.rowsIn(tx).lastCycleOf(account);
    if (!this.accounts.has(account) || this.writer.lastCycleOf(account) !== stored) {
      await this.loadAccount(tx, account, stored);
      this.accounts.add(account);
    }
  }

  /** Drops the writer's in-memory state (after a rollback); it is loaded again at the next cycle. */
  reset(): void {
    this.writer.reset();
    this.accounts.clear();
  }

  /** See Store.forgetBoxes; in `tx`. */
  async forget(tx: Transaction, serials: readonly string[], now: number): Promise<number> {
    if (serials.length === 0) return 0;
    return (await tx.query('UPDATE boxes SET forgotten_at = $1 WHERE serial = ANY($2::text[]) AND forgotten_at IS NULL RETURNING id', [now, serials])).length;
  }

  /**
   * Loads the writer's state without any account's boxes: each account's part is loaded at its
   * first cycle here (`loadAccount`), so that a process holds only the accounts it records (a
   * replica, those it leads), not the whole fleet.
   */
  private async load(tx: Transaction): Promise<void> {
    const lastCycles = await this.rowsIn(tx).lastCyclesOfAccounts();
    this.writer.load({
      boxes: [],
      lastCycles,
      openRows: [],
      strings: await tx.query<{ id: number; value: string }>('SELECT id, value FROM strings'),
    });
  }

  /** Loads one account's part of the writer's state again (CycleWriter.loadAccount); `lastCycle`: its latest stored cycle. */
  private async loadAccount(tx: Transaction, account: string, lastCycle: number | null): Promise<void> {
    const boxes = await tx.query<BoxRow>('SELECT * FROM boxes WHERE account = $1 ORDER BY serial COLLATE "C"', [account]);
    await internStrings(tx, [...new Set(boxes.map((b) => b.firmware))]);
    const ids = boxes.map((b) => b.id);
    this.writer.loadAccount({
      account,
      boxes,
      lastCycle,
      openRows: lastCycle === null ? [] : await tx.query<SampleRow>('SELECT hour, box_id, data FROM samples WHERE box_id = ANY($1::bigint[]) AND hour >= $2', [ids, hourOf(lastCycle)]),
      strings: await tx.query<{ id: number; value: string }>('SELECT id, value FROM strings'),
    });
  }

  /**
   * Writes a plan: its rows in one statement (each write a data-modifying WITH clause; they see
   * one snapshot, so a new box is inserted with its final values and not updated), then, when an
   * hour closed, its rollups (which need the closed hours' cycle starts).
   */
  private async apply(tx: Transaction, plan: HistoryPlan): Promise<void> {
    const c = plan.cycle;
    const t = c.startedAt;
    const w = new Writes();
    w.add('INSERT INTO cycles (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account) VALUES (#, #, #, #, #, #, #, #, #)', [
      t, c.durationMs, c.requests, c.outcome, c.errorCode, c.error, c.boxes, c.detailsFetched, c.account ?? DEFAULT_ACCOUNT,
    ]);
    if (plan.strings.length > 0) w.add('INSERT INTO strings (id, value) SELECT * FROM unnest(#::integer[], #::text[])', [plan.strings.map((s) => s.id), plan.strings.map((s) => s.value)]);
    const boxRows = (list: readonly BoxWrite[]): unknown[][] => list.map((b) => [b.id, b.snap.serial, b.segStart, ...boxValues(b.snap)]);
    const boxTypes = ['bigint', 'text', 'bigint', ...BOX_TYPES];
    const unnestBoxes = `unnest(${boxTypes.map((type) => `#::${type}[]`).join(', ')})`;
    const accountOfNew = new Map(plan.newBoxes.map((b) => [b.id, b.account]));
    const newBoxes = plan.seen.filter((b) => accountOfNew.has(b.id));
    const known = plan.seen.filter((b) => !accountOfNew.has(b.id));
    if (newBoxes.length > 0) {
      const unnestNew = `unnest(${[...boxTypes, 'text'].map((type) => `#::${type}[]`).join(', ')})`;
      w.add(`INSERT INTO boxes (id, serial, seg_start, ${BOX_COLUMNS.join(', ')}, account, first_seen, last_polled) SELECT *, #::bigint, #::bigint FROM ${unnestNew}`, [
        t, t, ...columnsOf(newBoxes.map((b) => [...(boxRows([b])[0] as unknown[]), accountOfNew.get(b.id)]), boxTypes.length + 1),
      ]);
    }
    if (known.length > 0) {
      const set = BOX_COLUMNS.map((col) => `${col} = u.${col}`).join(', ');
      w.add(
        `UPDATE boxes b SET ${set}, seg_start = u.seg_start, last_polled = #::bigint, missing_since = NULL, forgotten_at = NULL
           FROM ${unnestBoxes} AS u (id, serial, seg_start, ${BOX_COLUMNS.join(', ')}) WHERE b.id = u.id`,
        [t, ...columnsOf(boxRows(known), boxTypes.length)],
      );
    }
    // A box can both end its segment and go missing: one statement for both (one row, one update).
    const closed = plan.closed.map((c) => c.id); // last_polled is written for every listed box: a closed segment's row has it
    if (closed.length > 0 || plan.missing.length > 0) {
      w.add(
        `UPDATE boxes SET seg_start = CASE WHEN id = ANY(#::bigint[]) THEN NULL ELSE seg_start END,
           missing_since = CASE WHEN serial = ANY(#::text[]) THEN coalesce(missing_since, #::bigint) ELSE missing_since END
           WHERE id = ANY(#::bigint[]) OR serial = ANY(#::text[])`,
        [closed, plan.missing, t, closed, plan.missing],
      );
    }
    addSamples(w, plan.samples);
    await w.run(tx);
    await this.writeRollups(tx, plan);
  }

  /** The rollups of a plan's closed hours (which need those hours' cycle starts). */
  private async writeRollups(tx: Transaction, plan: Pick<HistoryPlan, 'closedHours'>): Promise<void> {
    if (plan.closedHours.length === 0) return;
    const starts = new Map<string, number[]>();
    for (const { account, hours } of closedHoursOf(plan)) {
      const list: number[] = [];
      for (const h of hours) list.push(...(await this.rowsIn(tx).cycleStarts(h * HOUR_MS, (h + 1) * HOUR_MS, account)));
      starts.set(account, list);
    }
    const update = ROLLUP_COLUMNS.slice(2).map((col) => `${col} = excluded.${col}`).join(', ');
    await tx.query(`INSERT INTO rollups (${ROLLUP_COLUMNS.join(', ')}) SELECT * FROM ${unnest(ROLLUP_TYPES)} ON CONFLICT (box_id, hour) DO UPDATE SET ${update}`, columnsOf(rollupsOf(plan, starts), ROLLUP_TYPES.length));
  }

  private rowsIn(tx: Transaction): PostgresHistoryRows {
    return new PostgresHistoryRows(tx);
  }

  // ---------------------------------------------------------------- reading

  /** The fleet (not forgotten), by serial; of the scope's accounts when given (in `tx` when given: a cycle's). */
  async boxes(tx: Transaction = this.db, scope?: CycleScope): Promise<BoxState[]> {
    const where = scope === undefined ? null : scopeSql(scope, 'account', 1);
    const sql = `SELECT * FROM boxes WHERE forgotten_at IS NULL${where === null ? '' : ` AND ${where.sql}`} ORDER BY serial COLLATE "C"`;
    return (await tx.query<BoxRow>(sql, where?.params ?? [])).map(toBoxState);
  }

  async box(serial: string): Promise<BoxState | undefined> {
    const [row] = await this.db.query<BoxRow>('SELECT * FROM boxes WHERE serial = $1', [serial]);
    return row === undefined ? undefined : toBoxState(row);
  }

  /**
   * The latest cycle of each account: the accounts found one index probe each (a loose scan of
   * `cycles_account`), then each one's latest cycle, so that the cost does not grow with the
   * cycles kept (the fleet snapshot asks whenever another process stored a cycle).
   */
  async lastCycles(): Promise<CycleRecord[]> {
    return (
      await this.db.query<CycleRow>(
        `WITH RECURSIVE a (account) AS (
           SELECT min(account) FROM cycles
           UNION ALL SELECT (SELECT min(account) FROM cycles WHERE account > a.account) FROM a WHERE a.account IS NOT NULL)
         SELECT c.* FROM a CROSS JOIN LATERAL (SELECT * FROM cycles WHERE account = a.account ORDER BY started_at DESC LIMIT 1) c
         ORDER BY c.account COLLATE "C"`,
      )
    ).map(toCycleRecord);
  }

  async lastCycle(): Promise<CycleRecord | undefined> {
    const [row] = await this.db.query<CycleRow>('SELECT * FROM cycles ORDER BY started_at DESC LIMIT 1');
    return row === undefined ? undefined : toCycleRecord(row);
  }

  valueAt(serial: string, metric: Metric, t: number): Promise<RawPoint | undefined> {
    return runLater(this.queries.valueAt(serial, metric, t), this.rows);
  }

  history(serial: string, metric: Metric, from: number, to: number, options?: HistoryOptions): Promise<HistoryResult> {
    return runLater(this.queries.history(serial, metric, from, to, options), this.rows);
  }

  uptime(from: number, to: number): Promise<UptimeRow[]> {
    return runLater(this.queries.uptime(from, to), this.rows);
  }

  /** Start of the oldest stored sample hour (ms), or null when nothing was sampled yet. */
  async historyStart(): Promise<number | null> {
    const [row] = await this.db.query<{ h: number | null }>('SELECT min(hour) AS h FROM samples');
    return row?.h === null || row === undefined ? null : row.h * HOUR_MS;
  }

  /** Start times of the successful poll cycles in [from, to), ascending. */
  async okCycleStarts(from: number, to: number): Promise<number[]> {
    return (await this.db.query<{ t: number }>("SELECT started_at AS t FROM cycles WHERE outcome = 'ok' AND started_at >= $1 AND started_at < $2 ORDER BY started_at", [from, to])).map((r) => r.t);
  }

  // ---------------------------------------------------------------- retention

  /**
   * Deletes what is past retention (history and finished alert history), at most about `maxRows`
   * rows, in statements of at most 500 rows, each its own transaction. Returns the rows deleted.
   */
  async prune(now: number, retention: RetentionMs, options: PruneOptions = {}): Promise<number> {
    const db = this.db;
    const spent = { rows: 0, budget: options.maxRows ?? Infinity };
    const cut = cutoffs(now, retention, this.writer.loaded ? this.writer.lastCycles() : await this.rows.lastCyclesOfAccounts());
    const batch = async (sql: string, params: unknown[]): Promise<number> => (await db.query(`${sql} RETURNING 1`, params)).length;
    const drain = (sql: string, params: unknown[]): Promise<boolean> => drainAwaitable(() => batch(sql, params), PRUNE_BATCH, spent);
    if (!(await drain(`DELETE FROM samples WHERE (box_id, hour) IN (SELECT box_id, hour FROM samples WHERE hour < $1 LIMIT ${PRUNE_BATCH})`, [cut.rawHour]))) return spent.rows;
    await db.query(
      'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE meta.value::bigint < excluded.value::bigint',
      [RAW_PRUNED_BEFORE, String(cut.rawHour * HOUR_MS)],
    );
    for (const { id } of await db.query<{ id: number }>('SELECT id FROM boxes ORDER BY id')) {
      if (!(await drain(`DELETE FROM rollups WHERE box_id = $1 AND hour IN (SELECT hour FROM rollups WHERE box_id = $1 AND hour < $2 LIMIT ${PRUNE_BATCH})`, [id, cut.rollupHour]))) return spent.rows;
    }
    const finished = [
      `DELETE FROM cycles WHERE started_at IN (SELECT started_at FROM cycles WHERE started_at < $1 LIMIT ${PRUNE_BATCH})`,
      `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE status IN ('delivered', 'dead') AND done_at < $1 LIMIT ${PRUNE_BATCH})`,
      `DELETE FROM alert_transitions WHERE id IN (SELECT id FROM alert_transitions WHERE at < $1 LIMIT ${PRUNE_BATCH})`,
      `DELETE FROM silences WHERE id IN (SELECT id FROM silences WHERE ends_at < $1 LIMIT ${PRUNE_BATCH})`,
      `DELETE FROM acks WHERE id IN (SELECT id FROM acks WHERE at < $1 LIMIT ${PRUNE_BATCH})`,
    ];
    for (const sql of finished) if (!(await drain(sql, [cut.before]))) return spent.rows;
    return spent.rows;
  }
}

/** Inserts or replaces sample rows (one statement). */
function addSamples(w: Writes, samples: readonly SampleRow[]): void {
  if (samples.length === 0) return;
  w.add('INSERT INTO samples (box_id, hour, data) SELECT * FROM unnest(#::bigint[], #::integer[], #::bytea[]) ON CONFLICT (box_id, hour) DO UPDATE SET data = excluded.data', [
    samples.map((s) => s.box_id), samples.map((s) => s.hour), samples.map((s) => s.data),
  ]);
}
