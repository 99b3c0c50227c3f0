/**
 * The row layout of the alert repositories' tables, shared by the SQLite (src/store/sqlite/) and
 * PostgreSQL (src/store/postgres/) implementations: both store the same columns, JSON as text, so
 * a row is turned into domain data (and a damaged row set aside or rebuilt) in exactly one place.
 *
 * - silences: matchers as JSON arrays; a damaged row silences nothing and is not listed;
 * - alert states: the engine's AlertState as JSON, key/rule/serial/status in plain columns; a
 *   damaged state is rebuilt from them (docs/reliability.md, "Damaged rows", and below);
 * - transitions: value, threshold and held_by as JSON; a damaged row is set aside;
 * - the group queue and the outbox: an item or message as JSON of the caller's type.
 */
import type { Lease, Replica } from '../domain/leases.js';
import { randomUUID } from 'node:crypto';
import type { OutboxEntry, TransitionRow } from '../alerts/repositories.js';
import type { Silence } from '../alerts/silences.js';
import { initialState } from '../alerts/state.js';
import type { AlertState, AlertStatus, Severity, Transition } from '../alerts/types.js';
import { isObject, isScalar, isStringArray, type DamagedRows } from './damaged-rows.js';

// ---------------------------------------------------------------- silences

export interface SilenceDbRow {
  id: string;
  boxes: string | null;
  rules: string | null;
  starts_at: number;
  ends_at: number;
  comment: string;
  created_by: string | null;
}

/** A new silence with its id, and its row values (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at). */
export function newSilence(input: Omit<Silence, 'id'>, now: number): { silence: Silence; values: (string | number | null)[] } {
  const silence: Silence = { id: randomUUID().slice(0, 8), ...input };
  const values = [
    silence.id,
    silence.matchers.boxes?.length ? JSON.stringify(silence.matchers.boxes) : null,
    silence.matchers.rules?.length ? JSON.stringify(silence.matchers.rules) : null,
    silence.startsAt,
    silence.endsAt,
    silence.comment,
    silence.createdBy ?? null,
    now,
  ];
  return { silence, values };
}

/** The silence a row holds, or undefined when its matchers are damaged (set aside). */
export function toSilence(row: SilenceDbRow, damaged: DamagedRows): Silence | undefined {
  const boxes = damaged.read<string[] | null>('silences', row.id, row.boxes, isStringArray, null);
  const rules = damaged.read<string[] | null>('silences', row.id, row.rules, isStringArray, null);
  if (boxes === undefined || rules === undefined) return undefined;
  return {
    id: row.id,
    matchers: { ...(boxes ? { boxes } : {}), ...(rules ? { rules } : {}) },
    startsAt: row.starts_at,
    endsAt: row.ends_at,
    comment: row.comment,
    createdBy: row.created_by,
  };
}

// ---------------------------------------------------------------- alert states

export interface StateDbRow {
  key: string;
  rule: string;
  serial: string;
  status: string;
  state: string;
}

/** One alert state to write: the plain columns and the JSON. */
export interface StateUpsert {
  key: string;
  rule: string;
  serial: string;
  status: string;
  state: string;
}

const looksLikeState = (v: unknown): boolean => isObject(v) && typeof v.key === 'string' && typeof v.status === 'string' && typeof v.rule === 'string';

/**
 * Reading and diffing alert-state rows. A damaged row (JSON unreadable) is rebuilt from its plain
 * columns rather than dropped, so that what was announced stays announced:
 * - `firing`: taken as announced. It stays firing (no second FIRING) and its RESOLVED is sent when
 *   the condition clears.
 * - `resolved`: taken as resolved and announced; it goes back to rest (no second RESOLVED).
 * - `pending`: the `for` timer restarts at the cycle that found it (nothing was announced yet).
 * The rebuilt state lacks the old value and times (since = the moment it was found); it is
 * written back whole at the next evaluation (`changes` includes it even if unchanged).
 */
export class AlertStateRows {
  /** Keys whose row was damaged and rebuilt: written back at the next save even if unchanged. */
  private readonly rebuilt = new Set<string>();

  constructor(
    private readonly damaged: DamagedRows,
    private readonly now: () => number,
  ) {}

  decode(rows: readonly StateDbRow[]): Map<string, AlertState> {
    const map = new Map<string, AlertState>();
    for (const row of rows) map.set(row.key, this.damaged.read<AlertState>('alert_states', row.key, row.state, looksLikeState) ?? this.rebuild(row));
    return map;
  }

  /** The rows to write (states that differ from `prev`, or were rebuilt) and the keys to delete. */
  changes(prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[]): { upserts: StateUpsert[]; deletes: string[] } {
    const upserts: StateUpsert[] = [];
    for (const [key, state] of next) {
      const before = prev.get(key);
      // The engine returns the very state it was given when a cycle changed nothing in it (most alerts, most cycles).
      if (before === state && !this.rebuilt.has(key)) continue;
      const text = JSON.stringify(state);
      if (before !== undefined && JSON.stringify(before) === text && !this.rebuilt.has(key)) continue;
      upserts.push({ key, rule: state.rule, serial: state.serial, status: state.status, state: text });
      this.rebuilt.delete(key);
    }
    for (const key of dropped) this.rebuilt.delete(key);
    return { upserts, deletes: [...dropped] };
  }

  private rebuild(row: StateDbRow): AlertState {
    const now = this.now();
    this.rebuilt.add(row.key);
    // The severity and kind are the rule's; the engine takes them from the configuration again.
    const state = initialState({ name: row.rule, kind: '', severity: 'warning' as Severity }, row.serial, now);
    const status = (['pending', 'firing', 'resolved'] as AlertStatus[]).includes(row.status as AlertStatus) ? (row.status as AlertStatus) : 'inactive';
    state.key = row.key;
    state.status = status;
    if (status === 'pending') {
      state.activeSince = now;
      state.activeCycles = 1;
    } else if (status === 'firing') {
      state.activeSince = now;
      state.activeCycles = 1;
      state.firingSince = now;
      state.notifiedFiring = true;
      state.lastNotifiedAt = now;
    } else if (status === 'resolved') {
      state.resolvedAt = now;
    }
    return state;
  }
}

// ---------------------------------------------------------------- transitions

export interface TransitionDbRow {
  id: number;
  key: string;
  rule: string;
  serial: string;
  severity: Transition['severity'];
  from_status: Transition['from'];
  to_status: Transition['to'];
  at: number;
  value: string | null;
  threshold: string | null;
  summary: string | null;
  held_back: Transition['heldBack'];
  held_by: string | null;
}

/** The column list of an inserted transition, in the order of `transitionValues` (key first: PostgreSQL derives it and leaves it out). */
export const TRANSITION_COLUMNS = 'key, rule, serial, severity, from_status, to_status, at, value, threshold, summary, held_back, held_by';

export function transitionValues(t: Transition): (string | number | null)[] {
  return [
    t.key,
    t.rule,
    t.serial,
    t.severity,
    t.from,
    t.to,
    t.at,
    JSON.stringify(t.value ?? null),
    JSON.stringify(t.threshold ?? null),
    t.summary,
    t.heldBack,
    t.heldBy.length > 0 ? JSON.stringify(t.heldBy) : null,
  ];
}

/** The stored transition a row holds, or undefined when a JSON column is damaged (set aside). */
export function toTransition(r: TransitionDbRow, damaged: DamagedRows): TransitionRow | undefined {
  const value = damaged.read<TransitionRow['value']>('alert_transitions', r.id, r.value, isScalar, null);
  const threshold = damaged.read<TransitionRow['threshold']>('alert_transitions', r.id, r.threshold, isScalar, null);
  const heldBy = damaged.read<string[]>('alert_transitions', r.id, r.held_by, isStringArray, []);
  if (value === undefined || threshold === undefined || heldBy === undefined) return undefined;
  return {
    id: r.id,
    key: r.key,
    rule: r.rule,
    kind: '',
    serial: r.serial,
    severity: r.severity,
    from: r.from_status,
    to: r.to_status,
    at: r.at,
    value,
    threshold,
    summary: r.summary,
    heldBack: r.held_back,
    heldBy,
  };
}

// ---------------------------------------------------------------- group queue and outbox

/** The shape check of a queued item read back. */
export const looksLikeItem = (v: unknown): boolean => isObject(v) && typeof v.rule === 'string' && typeof v.status === 'string';

/** The default shape check of a stored outbox message: an object with a `kind`. */
export const looksLikeMessage = (v: unknown): boolean => isObject(v) && typeof v.kind === 'string';

export interface OutboxDbRow {
  id: number;
  notifier: string;
  created_at: number;
  message: string;
  attempts: number;
  next_attempt_at: number;
}

export interface OutboxLogDbRow extends OutboxDbRow {
  status: OutboxLogEntry<unknown>['status'];
  last_error: string | null;
  done_at: number | null;
}

export interface StoredOutboxRow<M> {
  id: number;
  notifier: string;
  message: M;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
}

/** One entry of the notification log, its items of the caller's type (OutboxEntry, with AlertItem). */
export type OutboxLogEntry<I> = Omit<OutboxEntry, 'items'> & { items: I[] };

/** Per notifier: rows waiting (pending or being sent, plus items still grouping), given up, and delivered. */
export interface OutboxCounts {
  notifier: string;
  pending: number;
  dead: number;
  delivered: number;
}

export function toOutboxRow<M>(r: OutboxDbRow, message: M): StoredOutboxRow<M> {
  return { id: r.id, notifier: r.notifier, message, createdAt: r.created_at, attempts: r.attempts, nextAttemptAt: r.next_attempt_at };
}

/** One entry of the notification log; a damaged message (undefined) tells about no items. */
export function toLogEntry<M, I>(r: OutboxLogDbRow, message: M | undefined, itemsOf: (message: M) => I[]): OutboxLogEntry<I> {
  return {
    id: r.id,
    notifier: r.notifier,
    createdAt: r.created_at,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    doneAt: r.done_at,
    items: message === undefined ? [] : itemsOf(message),
  };
}

/** Outbox counts per notifier with the queued (grouping) items added to `pending`, sorted by notifier. */
export function mergeOutboxCounts(outbox: readonly OutboxCounts[], queued: readonly { notifier: string; n: number }[]): OutboxCounts[] {
  const stats = new Map<string, OutboxCounts>();
  for (const r of outbox) stats.set(r.notifier, { ...r });
  for (const r of queued) {
    const s = stats.get(r.notifier) ?? { notifier: r.notifier, pending: 0, dead: 0, delivered: 0 };
    s.pending += r.n;
    stats.set(r.notifier, s);
  }
  return [...stats.values()].sort((a, b) => a.notifier.localeCompare(b.notifier));
}

/** A row of `leases` (migrations 0012 / postgres 0006), shared by both lease repositories. */
export interface LeaseDbRow {
  account: string;
  holder: string | null;
  token: number;
  expires_at: number;
}

/** A row of `replicas`. */
export interface ReplicaDbRow {
  id: string;
  host: string;
  pid: number;
  started_at: number;
  beat_at: number;
  shared_host: string | null;
  shared_pid: number | null;
  archive: string | null;
}

/** The columns of `replicas` that `toReplica` reads. */
export const REPLICA_COLUMNS = 'id, host, pid, started_at, beat_at, shared_host, shared_pid, archive';

export const toLease = (r: LeaseDbRow): Lease => ({ account: r.account, holder: r.holder, token: r.token, expiresAt: r.expires_at });
export const toReplica = (r: ReplicaDbRow): Replica => ({
  id: r.id,
  host: r.host,
  pid: r.pid,
  startedAt: r.started_at,
  beatAt: r.beat_at,
  sharedWith: r.shared_host === null ? null : { host: r.shared_host, pid: Number(r.shared_pid) },
  archive: r.archive,
});
