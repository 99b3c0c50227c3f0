/**
 * The storage the alert stages need, as interfaces owned here (the store implements them; see
 * src/store/sqlite/ for SQLite). Written so that a second implementation (PostgreSQL) can satisfy
 * them: no SQLite types, plain data in and out, and the daemon's write path asynchronous-capable.
 *
 * Why the write path looks like this: better-sqlite3 is synchronous and a SQLite transaction cannot
 * span an `await`, while a PostgreSQL client is asynchronous. So the write path never holds a
 * transaction open across the caller's code. A cycle is one unit-of-work call (`commitCycle`): the
 * store records the cycle, reads what the alert stage needs (boxes, alert states, silences) in the
 * same transaction, hands it to a pure, synchronous `decide` function, and persists what it
 * returns. The grouper likewise reads (`pending`) and then makes one atomic call (`release`).
 * Every method returns `Awaitable<T>`: SQLite answers at once, PostgreSQL with a Promise; callers
 * always await.
 *
 * The query side (`AlertQueries` and `SilenceWrites`, used by the CLI and the HTTP API) is
 * Awaitable too, like the Store API of src/domain/store.ts.
 */
import type { Awaitable } from '../awaitable.js';
import type { Fence, Lease } from '../domain/leases.js';
import type { AlertItem } from '../domain/notifications.js';
import { accountOf } from '../box-id.js';
import type { BoxState, CycleWrite, RecordedCycle } from '../domain/store.js';
import type { Ack } from './acks.js';
import type { Silence } from './silences.js';
import type { AlertState, Transition } from './types.js';

/**
 * A stored transition, with its row id (stable order). The rule's `kind` is not part of the stored
 * history: it reads back as '' (readers take it from the rules; src/views/alerts.ts).
 */
export interface TransitionRow extends Transition {
  id: number;
}

/** One notification routed to a notifier, waiting out group_wait. */
export interface QueuedItem<I> {
  notifier: string;
  createdAt: number;
  item: I;
}

/** A queued item as stored, with its id. */
export interface QueuedRow<I> extends QueuedItem<I> {
  id: number;
}

/**
 * The accounts whose boxes and alerts a cycle judges, so the part of the fleet the store reads
 * for it (CycleView): the cycle's own account and, when `alsoNotIn` is given, every account not
 * in that list (the cycle that retires accounts removed from the configuration: cycleScope in
 * src/alerts/pipeline.ts decides which). Without a scope, the whole fleet.
 */
export interface CycleScope {
  account: string;
  alsoNotIn?: readonly string[];
}

/** True when a box id or fleet key belongs to the scope (CycleScope). */
export function inScope(scope: CycleScope, key: string): boolean {
  return accountInScope(scope, accountOf(key));
}

/** True when the account's boxes and alerts belong to the scope (a box state says its account: no id to split). */
export function accountInScope(scope: CycleScope, account: string): boolean {
  return account === scope.account || (scope.alsoNotIn !== undefined && !scope.alsoNotIn.includes(account));
}

/** What the store reads for the alert stage of a cycle, inside the cycle's transaction. */
export interface CycleView {
  /** Box states after the cycle was recorded (not forgotten), of the cycle's scope (CycleScope). */
  boxes: BoxState[];
  /** Every alert not at rest, of the cycle's scope (CycleScope). */
  states: ReadonlyMap<string, AlertState>;
  /** Silences not ended at the cycle's `now` (pending and active). */
  silences: Silence[];
  /** The latest acknowledgement of each alert, by key (src/alerts/acks.ts); absent: none. */
  acks?: ReadonlyMap<string, Ack>;
  /** Every account's lease (replicas; src/domain/leases.ts); absent or empty: none was ever taken. */
  leases?: readonly Lease[];
}

/** What the alert stage of a cycle writes. */
export interface AlertWrite<I> {
  /** The alert states after the cycle; those equal to the view's are not rewritten. */
  states: ReadonlyMap<string, AlertState>;
  /** Keys of alerts back at rest (their state rows go). */
  dropped: readonly string[];
  transitions: readonly Transition[];
  /** Routed notifications for the group_wait queue. */
  queued: readonly QueuedItem<I>[];
  /** Serials of boxes to forget at the cycle's `now` (the missing rule's forget_after; see Store.forgetBoxes). */
  forget?: readonly string[];
  /** Accounts no longer configured that the cycle retired: the store closes their open hours (their rollups written). */
  retired?: readonly string[];
}

/** The daemon's cycle write: the cycle, its samples and its alert stage, all or nothing. */
export interface CycleCommitter<I> {
  /**
   * With a `fence` (replicas), nothing is written unless the fence still holds the account's lease
   * in this very transaction (LeaseLostError), and the queued items belong to the fence's account.
   * With a `scope`, the view holds the boxes and alert states of the scope's accounts only (the
   * rest of the fleet is not read); without, the whole fleet's.
   */
  commitCycle<T>(write: CycleWrite, now: number, decide: (view: CycleView) => { alerts: AlertWrite<I>; result: T }, fence?: Fence, scope?: CycleScope): Awaitable<{ recorded: RecordedCycle; result: T }>;
}

/** A batch of queued items leaving the queue as one outbox message (null: only drop the items). */
export interface ReleasedBatch<M> {
  notifier: string;
  ids: readonly number[];
  message: M | null;
}

/** The group_wait queue as the grouper sees it. */
export interface GroupQueue<I, M> {
  /** Queued items, per notifier oldest first, at most `perNotifier` of each notifier. Damaged rows are dropped. */
  pending(perNotifier: number, fence?: Fence): Awaitable<QueuedRow<I>[]>;
  /**
   * Atomically: removes the batches' items from the queue and puts their messages into the outbox
   * (each message belongs to its items' account). With a `fence`, only items of the fence's
   * account are read, and a release is refused (LeaseLostError, nothing moved) once the fence no
   * longer holds the account's lease.
   */
  release(batches: readonly ReleasedBatch<M>[], now: number, fence?: Fence): Awaitable<void>;
}

/** One outbox message as the notification log shows it (dashboard /alerts). */
export interface OutboxEntry {
  id: number;
  notifier: string;
  createdAt: number;
  status: 'pending' | 'sending' | 'delivered' | 'dead';
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  doneAt: number | null;
  /** The alerts the message told about (empty when the row is damaged). */
  items: AlertItem[];
}

/** Reads of alert state and history for the CLI and the HTTP API (Awaitable; see the header). */
export interface AlertQueries {
  /** Every alert not at rest, by key (of one account when given: by the account of its box id or fleet key). */
  states(account?: string): Awaitable<Map<string, AlertState>>;
  /** Transitions at or after `since` (of one box when `serial` is given), oldest first. */
  transitionsSince(since: number, serial?: string): Awaitable<TransitionRow[]>;
  /** The newest outbox messages created since `since` (at most `limit`, default 1000), newest first: the notification log. */
  outboxSince(since: number, limit?: number): Awaitable<OutboxEntry[]>;
  /** Silences not yet ended at `now` (pending and active); with `all`, every silence. */
  silences(now: number, options?: { all?: boolean }): Awaitable<Silence[]>;
  silence(id: string): Awaitable<Silence | undefined>;
}

/** Silences as `boxwatch silence` writes them. */
export interface SilenceWrites {
  addSilence(input: Omit<Silence, 'id'>, now: number): Awaitable<Silence>;
  /**
   * Ends a silence now; one that has not started yet ends too (it then starts and ends now, as in
   * Alertmanager: expired, never pending again). False if there is none with that id or it had
   * already ended.
   */
  expireSilence(id: string, now: number): Awaitable<boolean>;
}
