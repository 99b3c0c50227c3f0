/**
 * The PostgreSQL store (`storage.url`): the alert repositories on a shared PostgreSQL database,
 * satisfying the same contract suites as SQLite (test/contract/). What it holds in this version:
 *
 * - the outbox (OutboxRepository of src/notify/outbox.ts), safe for several processes at once;
 * - the group_wait queue (GroupQueue of src/alerts/repositories.ts);
 * - silences, alert states and transitions, with the alert stage's write as one transaction
 *   (`commitAlerts`: read states and silences, decide, write states, transitions and queued items);
 * - the alert queries and silence writes (AlertQueries & SilenceWrites), answering with Promises.
 *
 * Not yet: the fleet history (cycles, boxes, samples, rollups), so no CycleCommitter and no Store;
 * the daemon and the CLI run on SQLite only (docs/storage.md, "PostgreSQL").
 */
import type { AlertQueries, AlertWrite, OutboxEntry, SilenceWrites } from '../../alerts/repositories.js';
import type { Silence } from '../../alerts/silences.js';
import type { AlertState } from '../../alerts/types.js';
import type { AwaitableMethods } from '../../awaitable.js';
import { systemClock, type Clock } from '../../clock.js';
import { DamagedRows } from '../damaged-rows.js';
import { PostgresAlertStates } from './alert-states.js';
import { PostgresDatabase, type PostgresOptions } from './database.js';
import { PostgresGroupQueue } from './group-queue.js';
import { PostgresOutbox } from './outbox.js';
import { PostgresSilences } from './silences.js';
import { PostgresTransitions } from './transitions.js';

/** What the alert stage reads, inside the alert transaction. */
export interface AlertView {
  states: ReadonlyMap<string, AlertState>;
  /** Silences not ended at `now`. */
  silences: Silence[];
}

export interface PostgresStoreOptions extends PostgresOptions {
  clock?: Clock;
}

export class PostgresStore {
  /** Damaged JSON rows met by any repository of this store (logged once, counted per table). */
  readonly damagedRows = new DamagedRows();
  readonly alertStates: PostgresAlertStates;
  readonly transitions: PostgresTransitions;
  readonly silences: PostgresSilences;
  /** The alert reads of the CLI and the HTTP API, and the silence writes of `boxwatch silence`, answering later. */
  readonly alerts: AwaitableMethods<AlertQueries & SilenceWrites>;

  private constructor(
    private readonly db: PostgresDatabase,
    clock: Clock,
  ) {
    this.alertStates = new PostgresAlertStates(db, this.damagedRows, () => clock.now());
    this.transitions = new PostgresTransitions(db, this.damagedRows);
    this.silences = new PostgresSilences(db, this.damagedRows);
    const { alertStates, transitions, silences } = this;
    const log = this.outbox<{ items: unknown }>();
    this.alerts = {
      states: () => alertStates.states(),
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
    return new PostgresStore(await PostgresDatabase.open(url, options), options.clock ?? systemClock);
  }

  /** The database as it may be shown (`postgres://user@host:port/db`, no password). */
  get name(): string {
    return this.db.name;
  }

  /** The outbox, its messages of type M (checked by `looksRight` when read back). */
  outbox<M>(looksRight?: (value: unknown) => boolean): PostgresOutbox<M> {
    return new PostgresOutbox<M>(this.db, this.damagedRows, looksRight);
  }

  /** The group_wait queue of items of type I, released as outbox messages of type M. */
  groupQueue<I, M>(): PostgresGroupQueue<I, M> {
    return new PostgresGroupQueue<I, M>(this.db, this.damagedRows);
  }

  /**
   * The alert stage of a cycle as one transaction: reads the alert states and the silences not
   * ended at `now`, runs the pure `decide` on them and writes what it returns (states, dropped
   * keys, transitions, queued items). All or nothing: when `decide` throws, nothing is written.
   */
  async commitAlerts<I, T>(now: number, decide: (view: AlertView) => { alerts: AlertWrite<I>; result: T }): Promise<T> {
    const queue = this.groupQueue<I, unknown>();
    return this.db.transaction(async (tx) => {
      // Serialises alert-stage writers on this database (released at commit or with a lost connection).
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('boxwatch alert stage'))");
      const view: AlertView = { states: await this.alertStates.states(tx), silences: await this.silences.silences(now, {}, tx) };
      const { alerts, result } = decide(view);
      await this.alertStates.save(tx, view.states, alerts.states, alerts.dropped);
      await this.transitions.append(tx, alerts.transitions);
      await queue.enqueueItems(alerts.queued, tx);
      return result;
    });
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
