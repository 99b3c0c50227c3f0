/**
 * The SQLite store: one better-sqlite3 connection (private) behind the history API (writer.ts,
 * rows.ts, retention.ts; the logic shared with PostgreSQL is in src/store/history/) and the alert repositories (alert-states.ts, transitions.ts,
 * silences.ts, group-queue.ts, outbox.ts). Nothing outside src/store/sqlite/ sees the connection
 * or a SQLite type: consumers hold the interfaces they own (src/alerts/repositories.ts,
 * src/domain/outbox.ts, src/domain/store.ts).
 *
 * Every write that reads first runs in an IMMEDIATE transaction (the write lock is taken at BEGIN,
 * so a CLI writer next to the daemon makes it wait for busy_timeout, never fail with
 * SQLITE_BUSY_SNAPSHOT). A cycle (its history rows, alert states, transitions and queued
 * notifications) is one such transaction: `commitCycle`.
 */
import type Database from 'better-sqlite3';
import { accountInScope, inScope, type AlertQueries, type AlertWrite, type CycleScope, type CycleView, type OutboxEntry, type SilenceWrites } from '../../alerts/repositories.js';
import type { Fence } from '../../domain/leases.js';
import { systemClock, type Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { HOUR_MS } from '../codec.js';
import { DamagedRows } from '../damaged-rows.js';
import { StoreError } from '../errors.js';
import { damagedOr, openDatabase } from '../migrate.js';
import { HistoryQueries, runNow } from '../history/reader.js';
import { DEFAULT_MAX_GAP_MS } from '../history/writer.js';
import { DEFAULT_RAW_RETENTION_MS, type PruneOptions, type RetentionMs } from '../history/retention.js';
import { toBoxState, toCycleRecord, type BoxRow, type CycleRow } from '../history/rows.js';
import type { DataStore } from '../data-store.js';
import type { BoxState, CycleRecord, CycleWrite, HistoryOptions, HistoryResult, Metric, RawPoint, RecordedCycle, UptimeRow } from '../../domain/store.js';
import type { AlertState } from '../../alerts/types.js';
import { SqliteAcks } from './acks.js';
import { SqliteAlertStates } from './alert-states.js';
import { SqliteCallsRepo } from './calls.js';
import { SqliteRecordingsRepo } from './recordings.js';
import { SqliteTestCallsRepo } from './test-calls.js';
import { SqliteGroupQueue } from './group-queue.js';
import { checkFence, SqliteLeases } from './leases.js';
import { SqliteOutbox } from './outbox.js';
import { Retention } from './retention.js';
import { prepareStatements, SqliteHistoryRows, type Statements } from './rows.js';
import { SqliteSilences } from './silences.js';
import { SqliteTransitions } from './transitions.js';
import { inUse, isStale, sameHolder, takenOver, thisDaemon } from '../daemon-hold.js';
import type { DaemonHold, DaemonHolder, DaemonLock } from '../../domain/daemon-hold.js';
import { SqliteHistoryWriter } from './writer.js';


export interface StoreOptions {
  clock?: Clock;
  logger?: Logger;
  /** Where the NNNN_name.sql files are; default: the package's migrations/ folder. */
  migrationsDir?: string;
  /** Open an existing database for queries only (the CLI); no migrations are applied. */
  readonly?: boolean;
  /**
   * An observation holds until the next poll attempt, but at most this long; polls further apart
   * leave a gap between them. Default 5 minutes; must exceed the poll interval.
   */
  maxGapMs?: number;
  /** `storage.raw_retention` (default: its default): which accounts' open hours the writer loads (openHoursOf, history/retention.ts). */
  rawRetentionMs?: number;
}

/** The daemon's hold is kept in `meta` under this key (src/store/daemon-hold.ts). */
const DAEMON_KEY = 'daemon';

/** Opens (creating and migrating as needed) the store at `path`. */
export function openStore(path: string, options: StoreOptions = {}): SqliteStore {
  const clock = options.clock ?? systemClock;
  const db = openDatabase(path, {
    clock,
    logger: options.logger,
    migrationsDir: options.migrationsDir,
    readonly: options.readonly,
  });
  try {
    return new SqliteStore(db, path, options.maxGapMs ?? DEFAULT_MAX_GAP_MS, clock, options.rawRetentionMs ?? DEFAULT_RAW_RETENTION_MS);
  } catch (err) {
    db.close();
    throw damagedOr(err, path);
  }
}

export class SqliteStore implements DataStore {
  /** Damaged JSON rows met by any repository of this store (logged once, counted per table). */
  readonly damagedRows = new DamagedRows();
  readonly alertStates: SqliteAlertStates;
  readonly transitions: SqliteTransitions;
  readonly silences: SqliteSilences;
  /** Acknowledgements (`boxwatch ack`, POST /api/acks); read by every cycle. */
  readonly acks: SqliteAcks;
  /** The alert reads of the CLI and the HTTP API, and the silence writes of `boxwatch silence`. */
  readonly alerts: AlertQueries & SilenceWrites;
  /** The daemon's hold (`meta` key `daemon`): lockForDaemon, heartbeatForDaemon, unlockForDaemon. */
  readonly hold: DaemonHold = {
    take: () => this.lockForDaemon(),
    beat: () => this.heartbeatForDaemon(),
    release: () => this.unlockForDaemon(),
  };
  private readonly s: Statements;
  private readonly writer: SqliteHistoryWriter;
  private readonly rows: SqliteHistoryRows;
  private readonly queries: HistoryQueries;
  private readonly retention: Retention;
  private heldByUs: DaemonHolder | null = null;
  private callsRepo: SqliteCallsRepo | undefined;
  private recordingsRepo: SqliteRecordingsRepo | undefined;
  private testCallsRepo: SqliteTestCallsRepo | undefined;
  private leasesRepo: SqliteLeases | undefined;
  /** SQLite's data_version when this connection last looked (followOtherConnections). */
  private dataVersion: number | null = null;

  constructor(
    private readonly db: Database.Database,
    /** The database file (for messages). */
    readonly path: string,
    readonly maxGapMs: number,
    private readonly clock: Clock = systemClock,
    rawRetentionMs: number = DEFAULT_RAW_RETENTION_MS,
  ) {
    this.s = prepareStatements(db);
    this.writer = new SqliteHistoryWriter(this.s, maxGapMs, rawRetentionMs);
    this.rows = new SqliteHistoryRows(this.s);
    this.queries = new HistoryQueries(maxGapMs);
    this.retention = new Retention(this.s, db, () => this.writer.lastCycles());
    this.alertStates = new SqliteAlertStates(db, this.damagedRows, () => clock.now());
    this.transitions = new SqliteTransitions(db, this.damagedRows);
    this.silences = new SqliteSilences(db, this.damagedRows);
    this.acks = new SqliteAcks(db);
    const { alertStates, transitions, silences } = this;
    const log = new SqliteOutbox<{ items: unknown }>(db, this.damagedRows);
    this.alerts = {
      states: (account) => {
        this.followOtherConnections();
        const states = alertStates.states();
        return account === undefined ? states : new Map([...states].filter(([, st]) => inScope({ account }, st.serial)));
      },
      transitionsSince: (since, serial) => transitions.transitionsSince(since, serial),
      // The items are the alert items the grouper stored (AlertItem); a damaged message has none.
      outboxSince: (since, limit = 1000) => log.log(since, limit, (m) => (Array.isArray(m.items) ? m.items : [])) as OutboxEntry[],
      silences: (now, options) => silences.silences(now, options),
      silence: (id) => silences.silence(id),
      addSilence: (input, now) => {
        this.writable();
        return silences.addSilence(input, now);
      },
      expireSilence: (id, now) => {
        this.writable();
        return silences.expireSilence(id, now);
      },
    };
  }

  /** The database as it may be shown (DataStore): its file. */
  get name(): string {
    return this.path;
  }

  /** The calls repository (built on first use: a read-only database from before calls has no such table). */
  get calls(): SqliteCallsRepo {
    this.callsRepo ??= new SqliteCallsRepo(this.db);
    return this.callsRepo;
  }

  /** The recording archive's repository (built on first use, like `calls`). */
  get recordings(): SqliteRecordingsRepo {
    this.recordingsRepo ??= new SqliteRecordingsRepo(this.db);
    return this.recordingsRepo;
  }

  /** Test calls (`test_calls:`, migrations/0010_test_calls.sql). */
  get testCalls(): SqliteTestCallsRepo {
    this.testCallsRepo ??= new SqliteTestCallsRepo(this.db);
    return this.testCallsRepo;
  }

  /** The outbox, its messages of type M (checked by `looksRight` when read back). */
  outbox<M>(looksRight?: (value: unknown) => boolean): SqliteOutbox<M> {
    return new SqliteOutbox<M>(this.db, this.damagedRows, looksRight);
  }

  /** The group_wait queue of items of type I, released as outbox messages of type M. */
  groupQueue<I, M>(): SqliteGroupQueue<I, M> {
    return new SqliteGroupQueue<I, M>(this.db, this.damagedRows);
  }

  /** Replicas and per-account leases (src/domain/leases.ts): replicas on one machine sharing this file. */
  get leases(): SqliteLeases {
    this.leasesRepo ??= new SqliteLeases(this.db);
    return this.leasesRepo;
  }

  // ---------------------------------------------------------------- writing

  /**
   * Records one poll cycle in one transaction. Each account's cycle times only move forward: a
   * cycle whose start is not after its account's previous one (the clock stepped back) is
   * recorded 1 ms after it; the result says so.
   */
  recordCycle(write: CycleWrite): RecordedCycle {
    return this.unitOfWork(() => this.writer.record(write));
  }

  /**
   * The daemon's cycle as one unit of work: records the cycle, reads what the alert stage needs,
   * runs the pure `decide` on it and writes what it returns, in one IMMEDIATE transaction.
   */
  commitCycle<I, T>(write: CycleWrite, now: number, decide: (view: CycleView) => { alerts: AlertWrite<I>; result: T }, fence?: Fence, scope?: CycleScope): { recorded: RecordedCycle; result: T } {
    const queue = this.groupQueue<I, unknown>();
    return this.unitOfWork(() => {
      // A replica that lost the account's lease writes nothing (LeaseLostError).
      if (fence !== undefined) checkFence(this.db, fence);
      const recorded = this.writer.record(write);
      // The fleet as the writer just wrote it (inside this transaction), not read back; the scope's part of it.
      const boxes = this.boxes();
      const states = this.alertStates.states();
      const view: CycleView = {
        boxes: scope === undefined ? boxes : boxesInScope(boxes, scope),
        states: scope === undefined ? states : statesInScope(states, scope),
        silences: this.silences.silences(now),
        acks: this.acks.latestByKey(),
        leases: this.leases.leases(),
      };
      const { alerts, result } = decide(view);
      if (alerts.forget !== undefined && alerts.forget.length > 0) this.forgetIn(alerts.forget, now);
      if (alerts.retired !== undefined) this.writer.retire(alerts.retired, now);
      this.alertStates.save(view.states, alerts.states, alerts.dropped);
      this.transitions.append(alerts.transitions);
      queue.enqueueItems(alerts.queued, fence?.account ?? write.cycle.account);
      return { recorded, result };
    });
  }

  /** See Store.forgetBoxes. */
  forgetBoxes(serials: readonly string[], now: number): number {
    return this.unitOfWork(() => this.forgetIn(serials, now));
  }

  private forgetIn(serials: readonly string[], now: number): number {
    return this.writer.forget(serials, now);
  }

  private unitOfWork<T>(fn: () => T): T {
    this.writable();
    try {
      return this.db.transaction(() => {
        this.followOtherConnections();
        return fn();
      }).immediate();
    } catch (err) {
      // The in-memory state may hold what was rolled back.
      this.writer.reset();
      this.alertStates.reset();
      throw err;
    }
  }

  /**
   * The writer's in-memory fleet and the alert states held in memory are this connection's: when
   * another connection committed since we last looked (a CLI's `box forget`, `ack`, `silence`:
   * SQLite's data_version changed), they are dropped and read again, so that boxes(), the alert
   * states and the next cycle see the changed rows.
   */
  private followOtherConnections(): void {
    const version = this.s.dataVersion.get() as number;
    if (version === this.dataVersion) return;
    this.dataVersion = version;
    this.writer.reset();
    this.alertStates.reset();
  }

  private writable(): true {
    if (this.db.readonly) throw new StoreError('store_read_only', 'the store was opened read-only');
    return true;
  }

  // ---------------------------------------------------------------- the daemon's hold

  /**
   * Takes the database for this process's daemon, or refuses (StoreError `store_in_use`) naming the
   * holder and the database when another live daemon holds it. A holder is gone, and taken over,
   * when its heartbeat is older than DAEMON_STALE_AFTER_MS (on any host), or when it ran on this
   * host and its pid does not run (or is our own pid: an earlier life in a container). Claims on
   * outbox rows left by an earlier process are voided: only one daemon delivers.
   */
  lockForDaemon(): DaemonLock {
    const me = thisDaemon(this.clock.now());
    const tookOver = this.unitOfWork(() => {
      const holder = this.daemonHolder();
      if (holder !== null && !isStale(holder, me)) throw inUse(this.path, holder, me, 'another storage.path');
      this.s.setMeta.run(DAEMON_KEY, JSON.stringify(me));
      this.outbox().unclaimAll();
      return holder;
    });
    this.heldByUs = me;
    return { holder: me, tookOver };
  }

  /**
   * The daemon's heartbeat (every DAEMON_HEARTBEAT_MS): refreshes the time in its hold. Throws
   * StoreError `store_in_use` when another daemon holds the database now (it found this one's
   * heartbeat too old and took over): this daemon must stop.
   */
  heartbeatForDaemon(): void {
    const mine = this.heldByUs;
    if (mine === null) return;
    this.unitOfWork(() => {
      const holder = this.daemonHolder();
      if (holder === null || !sameHolder(holder, mine)) {
        this.heldByUs = null;
        throw takenOver(this.path, holder);
      }
      mine.beat = systemClock.now();
      this.s.setMeta.run(DAEMON_KEY, JSON.stringify(mine));
    });
  }

  /** Gives the database up (when the daemon stops); only if this process still holds it. */
  unlockForDaemon(): void {
    const mine = this.heldByUs;
    if (mine === null) return;
    this.heldByUs = null;
    this.unitOfWork(() => {
      const holder = this.daemonHolder();
      if (holder !== null && sameHolder(holder, mine)) {
        this.db.prepare('DELETE FROM meta WHERE key = ?').run(DAEMON_KEY);
      }
    });
  }

  private daemonHolder(): DaemonHolder | null {
    const text = this.s.getMeta.get(DAEMON_KEY) as string | undefined;
    return text === undefined ? null : parseHolder(text);
  }

  // ---------------------------------------------------------------- reading

  /**
   * The fleet (of one account when given): from the writer's memory once it recorded a cycle (and
   * no other connection wrote since), else read.
   */
  boxes(account?: string): BoxState[] {
    this.followOtherConnections();
    const fleet = this.writer.fleet() ?? (this.s.fleetBoxes.all() as BoxRow[]).map(toBoxState);
    return account === undefined ? fleet : fleet.filter((b) => b.account === account);
  }

  box(serial: string): BoxState | undefined {
    const row = this.s.box.get(serial) as BoxRow | undefined;
    return row === undefined ? undefined : toBoxState(row);
  }

  lastCycle(): CycleRecord | undefined {
    const r = this.s.lastCycle.get() as CycleRow | undefined;
    return r === undefined ? undefined : toCycleRecord(r);
  }

  lastCycles(): CycleRecord[] {
    return (this.s.lastCycleOfEach.all() as CycleRow[]).map(toCycleRecord);
  }

  valueAt(serial: string, metric: Metric, t: number): RawPoint | undefined {
    return runNow(this.queries.valueAt(serial, metric, t), this.rows);
  }

  history(serial: string, metric: Metric, from: number, to: number, options?: HistoryOptions): HistoryResult {
    return runNow(this.queries.history(serial, metric, from, to, options), this.rows);
  }

  uptime(from: number, to: number): UptimeRow[] {
    return runNow(this.queries.uptime(from, to), this.rows);
  }

  /** Start of the oldest stored sample hour (ms), or null when nothing was sampled yet. */
  historyStart(): number | null {
    const hour = this.s.firstSampleHour.get() as number | null;
    return hour === null ? null : hour * HOUR_MS;
  }

  /** Start times of the successful poll cycles in [from, to) (of one account when given), ascending. */
  okCycleStarts(from: number, to: number, account?: string): number[] {
    return (account === undefined ? this.s.okCycleStarts.all(from, to) : this.s.okCycleStartsOf.all(from, to, account)) as number[];
  }

  /**
   * How the database's times were taken: `simulated` for a demo database (the app ran on the
   * simulator's clock, ahead of the wall clock), absent otherwise.
   */
  clockKind(): string | undefined {
    return this.s.getMeta.get('clock') as string | undefined;
  }

  /** Marks the database's times as simulated (`boxwatch demo`). */
  markSimulatedClock(): void {
    this.writable();
    this.s.setMeta.run('clock', 'simulated');
  }

  // ---------------------------------------------------------------- retention

  /** See Retention.prune: history and finished alert history past retention, at most about `maxRows` rows. */
  prune(now: number, retention: RetentionMs, options: PruneOptions = {}): number {
    this.writable();
    return this.retention.prune(now, retention, options);
  }

  close(): void {
    try {
      if (this.db.open && !this.db.readonly) this.unlockForDaemon();
    } finally {
      this.db.close();
    }
  }
}

function parseHolder(text: string): DaemonHolder | null {
  try {
    const v = JSON.parse(text) as Partial<DaemonHolder>;
    if (typeof v.pid !== 'number' || typeof v.host !== 'string' || typeof v.since !== 'number') return null;
    return { pid: v.pid, host: v.host, since: v.since, ...(typeof v.beat === 'number' && { beat: v.beat }) };
  } catch {
    return null; // unreadable: nobody can be shown to hold it
  }
}

// The scope's part of the fleet and of the alerts, each cycle: loops in module functions, not
// filters with an arrow made per cycle, whose optimized code V8 drops between cycles and compiles
// again.

/** The boxes of the scope's accounts. */
function boxesInScope(boxes: readonly BoxState[], scope: CycleScope): BoxState[] {
  const inside: BoxState[] = [];
  for (const b of boxes) if (accountInScope(scope, b.account)) inside.push(b);
  return inside;
}

/** The alerts of the scope's accounts, by key. */
function statesInScope(states: ReadonlyMap<string, AlertState>, scope: CycleScope): Map<string, AlertState> {
  const inside = new Map<string, AlertState>();
  for (const [key, st] of states) if (inScope(scope, st.serial)) inside.set(key, st);
  return inside;
}
