/**
 * The PostgreSQL store (`storage.url`): the fleet history and the alert repositories on a shared
 * PostgreSQL database, satisfying the same contract suites as SQLite (test/contract/):
 *
 * - the fleet history (history.ts: the writer and queries of src/store/history/), the Store API
 *   answering with Promises;
 * - the cycle's unit of work (`commitCycle`: the cycle, its alert stage and its queued
 *   notifications in one transaction);
 * - the outbox (OutboxRepository of src/domain/outbox.ts), safe for several processes at once;
 * - the group_wait queue (GroupQueue of src/alerts/repositories.ts);
 * - calls (CallsRepo of src/domain/calls.ts, calls.ts), test calls (TestCallsRepo,
 *   test-calls.ts) and the recording archive's records (RecordingsRepo, recordings.ts), answering
 *   with Promises;
 * - silences, alert states, transitions and acks, and the alert queries and silence writes
 *   (AlertQueries & SilenceWrites), answering with Promises;
 * - replicas and per-account leases (LeaseRepository of src/domain/leases.ts, leases.ts); the
 *   cycle write, the outbox claim and the group queue's release take a fence and check it in
 *   their own transaction.
 */
import type { AlertQueries, AlertWrite, CycleScope, CycleView, OutboxEntry, SilenceWrites } from '../../alerts/repositories.js';
import type { Fence } from '../../domain/leases.js';
import { systemClock, type Clock } from '../../clock.js';
import { DamagedRows } from '../damaged-rows.js';
import type { PruneOptions, RetentionMs } from '../history/retention.js';
import { DEFAULT_MAX_GAP_MS } from '../history/writer.js';
import type { DataStore } from '../data-store.js';
import type { BoxState, CycleRecord, CycleWrite, HistoryOptions, HistoryResult, Metric, RawPoint, RecordedCycle, UptimeRow } from '../../domain/store.js';
import { PostgresAcks } from './acks.js';
import { PostgresCallsRepo } from './calls.js';
import { PostgresAlertStates } from './alert-states.js';
import { PostgresDaemonHold } from './daemon-hold.js';
import { PostgresDatabase, type PostgresOptions, type Transaction } from './database.js';
import { PostgresGroupQueue } from './group-queue.js';
import { checkFence, PostgresLeases } from './leases.js';
import { PostgresHistory } from './history.js';
import { PostgresOutbox } from './outbox.js';
import { PostgresRecordingsRepo } from './recordings.js';
import { PostgresSilences } from './silences.js';
import { PostgresTestCallsRepo } from './test-calls.js';
import { PostgresTransitions } from './transitions.js';

/** Key of the transaction-scoped advisory lock that serializes replicas' cycle writes ('bxwc'). */
export const CYCLE_WRITE_LOCK = 0x62787763;

export interface PostgresStoreOptions extends PostgresOptions {
  /** As for SQLite (src/store/sqlite/store.ts StoreOptions): how long an observation holds at most. */
  maxGapMs?: number;
}

export class PostgresStore implements DataStore {
  /** Damaged JSON rows met by any repository of this store (logged once, counted per table). */
  readonly damagedRows = new DamagedRows();
  readonly alertStates: PostgresAlertStates;
  readonly transitions: PostgresTransitions;
  readonly silences: PostgresSilences;
  readonly acks: PostgresAcks;
  /** The alert reads of the CLI and the HTTP API, and the silence writes of `boxwatch silence`, answering later. */
  readonly alerts: AlertQueries & SilenceWrites;
  /** The daemon's hold on the database (the `daemon_hold` row). */
  readonly hold: PostgresDaemonHold;
  private readonly history_: PostgresHistory;
  /** The tail of the queue of history transactions (unitOfWork). */
  private historyQueue: Promise<unknown> = Promise.resolve();
  private callsRepo: PostgresCallsRepo | undefined;
  private leasesRepo: PostgresLeases | undefined;
  private testCallsRepo: PostgresTestCallsRepo | undefined;
  private recordingsRepo: PostgresRecordingsRepo | undefined;

  private constructor(
    private readonly db: PostgresDatabase,
    clock: Clock,
    readonly maxGapMs: number,
  ) {
    this.history_ = new PostgresHistory(db, maxGapMs);
    this.alertStates = new PostgresAlertStates(db, this.damagedRows, () => clock.now());
    this.transitions = new PostgresTransitions(db, this.damagedRows);
    this.silences = new PostgresSilences(db, this.damagedRows);
    this.acks = new PostgresAcks(db);
    this.hold = new PostgresDaemonHold(db, () => clock.now());
    const { alertStates, transitions, silences } = this;
    const log = this.outbox<{ items: unknown }>();
    this.alerts = {
      states: (account) => alertStates.states(db, account === undefined ? undefined : { account }),
      transitionsSince: (since, serial) => transitions.transitionsSince(since, serial),
      // The items are the alert items the grouper stored (AlertItem); a damaged message has none.
      outboxSince: async (since, limit = 1000) => (await log.log(since, limit, (m) => (Array.isArray(m.items) ? m.items : []))) as OutboxEntry[],
      silences: (now, options) => silences.silences(now, options),
      silence: (id) => silences.silence(id),
      addSilence: (input, now) => silences.addSilence(input, now),
      expireSilence: (id, now) => silences.expireSilence(id, now),
    };
  }

  /** Connects to `url` (postgres:// or postgresql://) and migrates it; StoreError when it cannot. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    return new PostgresStore(await PostgresDatabase.open(url, options), options.clock ?? systemClock, options.maxGapMs ?? DEFAULT_MAX_GAP_MS);
  }

  /** The database as it may be shown (`postgres://user@host:port/db`, no password). */
  get name(): string {
    return this.db.name;
  }

  /** The calls repository (src/domain/calls.ts), answering with Promises. */
  get calls(): PostgresCallsRepo {
    this.callsRepo ??= new PostgresCallsRepo(this.db);
    return this.callsRepo;
  }

  /** The test-calls repository (src/domain/test-calls.ts), answering with Promises. */
  get testCalls(): PostgresTestCallsRepo {
    this.testCallsRepo ??= new PostgresTestCallsRepo(this.db);
    return this.testCallsRepo;
  }

  /** The recordings repository (src/domain/recordings.ts), answering with Promises. */
  get recordings(): PostgresRecordingsRepo {
    this.recordingsRepo ??= new PostgresRecordingsRepo(this.db);
    return this.recordingsRepo;
  }

  /** The outbox, its messages of type M (checked by `looksRight` when read back). */
  outbox<M>(looksRight?: (value: unknown) => boolean): PostgresOutbox<M> {
    return new PostgresOutbox<M>(this.db, this.damagedRows, looksRight);
  }

  /** The group_wait queue of items of type I, released as outbox messages of type M. */
  groupQueue<I, M>(): PostgresGroupQueue<I, M> {
    return new PostgresGroupQueue<I, M>(this.db, this.damagedRows);
  }

  /** Replicas and per-account leases (src/domain/leases.ts). */
  get leases(): PostgresLeases {
    this.leasesRepo ??= new PostgresLeases(this.db);
    return this.leasesRepo;
  }

  // ---------------------------------------------------------------- writing

  /** Records one cycle (one transaction); see Store.recordCycle. */
  recordCycle(write: CycleWrite): Promise<RecordedCycle> {
    return this.unitOfWork((tx) => this.history_.record(tx, write));
  }

  /**
   * The daemon's cycle as one unit of work (CycleCommitter): records the cycle, reads what the
   * alert stage needs, runs the pure `decide` on it and writes what it returns, in one
   * transaction. All or nothing: when `decide` throws, nothing of the cycle is stored.
   */
  commitCycle<I, T>(write: CycleWrite, now: number, decide: (view: CycleView) => { alerts: AlertWrite<I>; result: T }, fence?: Fence, scope?: CycleScope): Promise<{ recorded: RecordedCycle; result: T }> {
    const queue = this.groupQueue<I, unknown>();
    return this.unitOfWork(async (tx) => {
      if (fence !== undefined) {
        // Replicas write other accounts' cycles meanwhile: cycle writes are serialized by a lock
        // that ends with the transaction (nothing can be left behind by a lost connection). The
        // history writer reads an account's state again only when another process recorded that
        // account since it did (PostgresHistory.record); ids come from the database's sequences.
        await tx.query('SELECT pg_advisory_xact_lock($1)', [CYCLE_WRITE_LOCK]);
        // Then the fence: a replica that lost the account's lease writes nothing (LeaseLostError);
        // a takeover waits for this transaction. Checked after the lock, so that the lease row is
        // not held while this write waits for another replica's: the lease's renewal (an UPDATE
        // of that row) would wait as long, and leases could run out under load.
        await checkFence(tx, fence);
      }
      const recorded = await this.history_.record(tx, write);
      // Only the scope's part of the fleet (its own account's, usually) is read: not the whole
      // fleet once per account and tick.
      const view: CycleView = {
        boxes: await this.history_.boxes(tx, scope),
        states: await this.alertStates.states(tx, scope),
        silences: await this.silences.silences(now, {}, tx),
        acks: await this.acks.latestByKey(tx),
        leases: await this.leases.leases(tx),
      };
      const { alerts, result } = decide(view);
      if (alerts.forget !== undefined) await this.history_.forget(tx, alerts.forget, now);
      if (alerts.retired !== undefined) await this.history_.retire(tx, alerts.retired, now);
      await this.alertStates.save(tx, view.states, alerts.states, alerts.dropped);
      await this.transitions.append(tx, alerts.transitions);
      await queue.enqueueItems(alerts.queued, tx, fence?.account ?? write.cycle.account);
      return { recorded, result };
    });
  }

  /** See Store.forgetBoxes. */
  forgetBoxes(serials: readonly string[], now: number): Promise<number> {
    return this.db.transaction((tx) => this.history_.forget(tx, serials, now));
  }

  /**
   * A transaction that writes history, one at a time (they share the history writer's memory:
   * two accounts' cycles committing at once queue here); a rollback drops that memory too.
   */
  private unitOfWork<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const run = this.historyQueue.then(async () => {
      try {
        return await this.db.transaction(fn);
      } catch (err) {
        this.history_.reset();
        throw err;
      }
    });
    this.historyQueue = run.catch(() => undefined);
    return run;
  }

  // ---------------------------------------------------------------- reading

  boxes(account?: string): Promise<BoxState[]> {
    return this.history_.boxes(this.db, account === undefined ? undefined : { account });
  }

  box(serial: string): Promise<BoxState | undefined> {
    return this.history_.box(serial);
  }

  lastCycle(): Promise<CycleRecord | undefined> {
    return this.history_.lastCycle();
  }

  lastCycles(): Promise<CycleRecord[]> {
    return this.history_.lastCycles();
  }

  valueAt(serial: string, metric: Metric, t: number): Promise<RawPoint | undefined> {
    return this.history_.valueAt(serial, metric, t);
  }

  history(serial: string, metric: Metric, from: number, to: number, options?: HistoryOptions): Promise<HistoryResult> {
    return this.history_.history(serial, metric, from, to, options);
  }

  uptime(from: number, to: number): Promise<UptimeRow[]> {
    return this.history_.uptime(from, to);
  }

  /** Always undefined: only `boxwatch demo` writes simulated times, and only to a SQLite file. */
  clockKind(): undefined {
    return undefined;
  }

  /** Start of the oldest stored sample hour (ms), or null when nothing was sampled yet. */
  historyStart(): Promise<number | null> {
    return this.history_.historyStart();
  }

  /** Start times of the successful poll cycles in [from, to), ascending. */
  okCycleStarts(from: number, to: number): Promise<number[]> {
    return this.history_.okCycleStarts(from, to);
  }

  // ---------------------------------------------------------------- retention

  /** History and finished alert history past retention, at most about `maxRows` rows; see PostgresHistory.prune. */
  prune(now: number, retention: RetentionMs, options?: PruneOptions): Promise<number> {
    return this.history_.prune(now, retention, options);
  }

  /** Gives the daemon's hold up (if this process holds it) and closes the connections. */
  async close(): Promise<void> {
    try {
      await this.hold.release();
    } finally {
      await this.db.close();
    }
  }
}
