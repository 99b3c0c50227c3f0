/**
 * The store as the daemon and the CLI hold it, whichever database is behind it: SQLite
 * (SqliteStore, `storage.path`) or PostgreSQL (PostgresStore, `storage.url`). Both implement it;
 * every method answers `Awaitable` (SQLite at once, PostgreSQL with a Promise) and callers await.
 * What only SQLite can do (synchronous reads for `boxwatch sql` and `boxwatch export`) is asked of
 * a SqliteStore, never of a DataStore.
 */
import type { AckRepository } from '../alerts/acks.js';
import type { AlertQueries, AlertWrite, CycleScope, CycleView, GroupQueue, SilenceWrites } from '../alerts/repositories.js';
import type { Awaitable } from '../awaitable.js';
import type { Fence, LeaseRepository } from '../domain/leases.js';
import type { OutboxRepository } from '../domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../domain/notifications.js';
import type { CallsRepo } from '../domain/calls.js';
import type { DaemonHold } from '../domain/daemon-hold.js';
import type { DamagedRows } from './damaged-rows.js';
import type { RecordingsRepo } from '../domain/recordings.js';
import type { TestCallsRepo } from '../domain/test-calls.js';
import type { CycleWrite, RecordedCycle, Store } from '../domain/store.js';

export interface DataStore extends Store {
  /** The database as it may be shown: a file path, or `postgres://user@host:port/db` (never a password). */
  readonly name: string;
  /** Damaged JSON rows met by any repository of this store (logged once, counted per table). */
  readonly damagedRows: DamagedRows;
  /** The alert reads of the CLI and the HTTP API, and the silence writes. */
  readonly alerts: AlertQueries & SilenceWrites;
  readonly acks: AckRepository;
  readonly calls: CallsRepo;
  readonly testCalls: TestCallsRepo;
  readonly recordings: RecordingsRepo;
  /** The daemon's hold on the database (one `boxwatch run` per database). */
  readonly hold: DaemonHold;
  /** Replicas and per-account leases (`cluster:`; src/domain/leases.ts). */
  readonly leases: LeaseRepository;
  /** The daemon's cycle as one unit of work (CycleCommitter of src/alerts/repositories.ts); with a fence, refused once its lease changed hands. */
  commitCycle<T>(write: CycleWrite, now: number, decide: (view: CycleView) => { alerts: AlertWrite<AlertItem>; result: T }, fence?: Fence, scope?: CycleScope): Awaitable<{ recorded: RecordedCycle; result: T }>;
  /** The outbox of notification messages (`looksRight` checks a message read back). */
  outbox(looksRight: (value: unknown) => boolean): OutboxRepository;
  /** The group_wait queue: alert items released as notification messages. */
  groupQueue(): GroupQueue<AlertItem, NotificationMessage>;
  /** `simulated` for a demo database (its times ran on the simulator's clock); absent otherwise. */
  clockKind(): Awaitable<string | undefined>;
}
