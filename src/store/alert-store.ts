/**
 * The SQLite side of alerting (schema: migrations/0002_alerts.sql): alert state per (rule, box),
 * the history of transitions, silences, the group_wait queue and the durable outbox. It shares the
 * store's connection, so the app writes a cycle, its transitions and its notifications in one
 * transaction (`store.transaction`).
 *
 * Delivery is at least once: an outbox row stays pending until a send succeeded, and a row
 * delivered is never sent again after a restart.
 */
import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type { AlertState, Transition } from '../alerts/types.js';
import type { Silence } from '../alerts/silences.js';
import type { OutboxQueue, OutboxRow } from '../notify/dispatcher.js';
import type { AlertItem, NotificationMessage } from '../notify/types.js';

export interface QueuedItem {
  notifier: string;
  createdAt: number;
  item: AlertItem;
}

export interface TransitionRow extends Transition {
  id: number;
}

/** One outbox message as the notification log shows it (dashboard /alerts). */
export interface OutboxEntry {
  id: number;
  notifier: string;
  createdAt: number;
  status: 'pending' | 'delivered' | 'dead';
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  doneAt: number | null;
  /** The alerts the message told about (empty when the row is damaged). */
  items: AlertItem[];
}

export interface OutboxStats {
  notifier: string;
  pending: number;
  dead: number;
  delivered: number;
}

interface SilenceRow {
  id: string;
  boxes: string | null;
  rules: string | null;
  starts_at: number;
  ends_at: number;
  comment: string;
  created_by: string | null;
}

interface TransitionDbRow {
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

interface OutboxDbRow {
  id: number;
  notifier: string;
  created_at: number;
  message: string;
  attempts: number;
  next_attempt_at: number;
}

/** Parses a stored JSON row; undefined when it is damaged or not of the expected shape. */
function parseRow<T>(text: string, looksRight: (value: Record<string, unknown>) => boolean): T | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && looksRight(value as Record<string, unknown>) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

const parseJson = <T>(text: string | null, fallback: T): T => (text === null ? fallback : (JSON.parse(text) as T));

export class AlertStore implements OutboxQueue {
  private readonly s;
  /** Rows that could not be read (damaged JSON) and were set aside; see /metrics and the logs. */
  unreadableRows = 0;

  constructor(private readonly db: Database.Database) {
    this.s = {
      states: db.prepare('SELECT state FROM alert_states'),
      upsertState: db.prepare(
        'INSERT INTO alert_states (key, rule, serial, status, state) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT(key) DO UPDATE SET status = excluded.status, state = excluded.state',
      ),
      deleteState: db.prepare('DELETE FROM alert_states WHERE key = ?'),
      insertTransition: db.prepare(
        'INSERT INTO alert_transitions (key, rule, serial, severity, from_status, to_status, at, value, threshold, summary, held_back, held_by) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      transitionsSince: db.prepare('SELECT * FROM alert_transitions WHERE at >= ? ORDER BY at, id'),
      transitionsOfBox: db.prepare('SELECT * FROM alert_transitions WHERE serial = ? AND at >= ? ORDER BY at, id'),
      outboxSince: db.prepare('SELECT * FROM outbox WHERE created_at >= ? ORDER BY id DESC LIMIT ?'),
      insertSilence: db.prepare(
        'INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      silencesEndingAfter: db.prepare('SELECT * FROM silences WHERE ends_at > ? ORDER BY starts_at, id'),
      allSilences: db.prepare('SELECT * FROM silences ORDER BY starts_at, id'),
      silenceById: db.prepare('SELECT * FROM silences WHERE id = ?'),
      expireSilence: db.prepare('UPDATE silences SET ends_at = ? WHERE id = ? AND ends_at > ?'),
      enqueueItem: db.prepare('INSERT INTO notification_queue (notifier, created_at, item) VALUES (?, ?, ?)'),
      queueHeads: db.prepare('SELECT notifier, MIN(created_at) AS oldest FROM notification_queue GROUP BY notifier'),
      queueOf: db.prepare('SELECT id, created_at, item FROM notification_queue WHERE notifier = ? ORDER BY id LIMIT ?'),
      dequeueUpTo: db.prepare('DELETE FROM notification_queue WHERE notifier = ? AND id <= ?'),
      insertOutbox: db.prepare('INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES (?, ?, ?, ?)'),
      due: db.prepare(
        "SELECT id, notifier, created_at, message, attempts, next_attempt_at FROM outbox WHERE notifier = ? AND status = 'pending' AND next_attempt_at <= ? ORDER BY id LIMIT ?",
      ),
      nextDue: db.prepare("SELECT MIN(next_attempt_at) FROM outbox WHERE notifier = ? AND status = 'pending'").pluck(),
      delivered: db.prepare("UPDATE outbox SET status = 'delivered', done_at = ? WHERE id = ?"),
      failed: db.prepare('UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?'),
      dead: db.prepare("UPDATE outbox SET status = 'dead', attempts = attempts + 1, last_error = ?, done_at = ? WHERE id = ?"),
      outboxStats: db.prepare(
        "SELECT notifier, SUM(status = 'pending') AS pending, SUM(status = 'dead') AS dead, SUM(status = 'delivered') AS delivered FROM outbox GROUP BY notifier",
      ),
      queuedCount: db.prepare('SELECT notifier, COUNT(*) AS n FROM notification_queue GROUP BY notifier'),
      pruneOutbox: db.prepare("DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE status != 'pending' AND done_at < ? LIMIT 500)"),
      pruneTransitions: db.prepare('DELETE FROM alert_transitions WHERE id IN (SELECT id FROM alert_transitions WHERE at < ? LIMIT 500)'),
      pruneSilences: db.prepare('DELETE FROM silences WHERE id IN (SELECT id FROM silences WHERE ends_at < ? LIMIT 500)'),
    };
  }

  // --- alert state and history -------------------------------------------------------------

  /** Every alert not at rest, keyed as the engine keys them. */
  states(): Map<string, AlertState> {
    const map = new Map<string, AlertState>();
    for (const text of this.s.states.pluck().all() as string[]) {
      const state = parseRow<AlertState>(text, (v) => typeof v.key === 'string' && typeof v.status === 'string');
      // A damaged row is dropped: that alert starts afresh at this cycle instead of stopping every cycle.
      if (state === undefined) this.unreadableRows += 1;
      else map.set(state.key, state);
    }
    return map;
  }

  /** Writes what one engine evaluation changed: states that differ from `prev`, dropped keys, transitions. */
  saveEvaluation(prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[], transitions: readonly Transition[]): void {
    for (const [key, state] of next) {
      const text = JSON.stringify(state);
      const before = prev.get(key);
      if (before !== undefined && JSON.stringify(before) === text) continue;
      this.s.upsertState.run(key, state.rule, state.serial, state.status, text);
    }
    for (const key of dropped) this.s.deleteState.run(key);
    for (const t of transitions) {
      this.s.insertTransition.run(
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
      );
    }
  }

  transitionsSince(since: number, serial?: string): TransitionRow[] {
    const rows = serial === undefined ? this.s.transitionsSince.all(since) : this.s.transitionsOfBox.all(serial, since);
    return (rows as TransitionDbRow[]).map((r) => ({
      id: r.id,
      key: r.key,
      rule: r.rule,
      kind: '',
      serial: r.serial,
      severity: r.severity,
      from: r.from_status,
      to: r.to_status,
      at: r.at,
      value: parseJson(r.value, null),
      threshold: parseJson(r.threshold, null),
      summary: r.summary,
      heldBack: r.held_back,
      heldBy: parseJson<string[]>(r.held_by, []),
    }));
  }

  // --- silences ------------------------------------------------------------------------------

  addSilence(input: Omit<Silence, 'id'>, now: number): Silence {
    const silence: Silence = { id: randomUUID().slice(0, 8), ...input };
    this.s.insertSilence.run(
      silence.id,
      silence.matchers.boxes?.length ? JSON.stringify(silence.matchers.boxes) : null,
      silence.matchers.rules?.length ? JSON.stringify(silence.matchers.rules) : null,
      silence.startsAt,
      silence.endsAt,
      silence.comment,
      silence.createdBy ?? null,
      now,
    );
    return silence;
  }

  /** Silences not yet ended at `now` (pending and active); with `all`, every silence. */
  silences(now: number, options: { all?: boolean } = {}): Silence[] {
    const rows = (options.all ? this.s.allSilences.all() : this.s.silencesEndingAfter.all(now)) as SilenceRow[];
    return rows.map(toSilence);
  }

  silence(id: string): Silence | undefined {
    const row = this.s.silenceById.get(id) as SilenceRow | undefined;
    return row ? toSilence(row) : undefined;
  }

  /** Ends a silence now; false if there is none with that id or it had already ended. */
  expireSilence(id: string, now: number): boolean {
    return this.s.expireSilence.run(now, id, now).changes > 0;
  }

  // --- group_wait queue ----------------------------------------------------------------------

  enqueueItems(items: readonly QueuedItem[]): void {
    for (const q of items) this.s.enqueueItem.run(q.notifier, q.createdAt, JSON.stringify(q.item));
  }

  /**
   * Turns queued items into outbox messages: for each notifier whose oldest queued item has waited
   * `groupWaitMs`, everything queued for it (up to `maxItems`) becomes one message. One transaction.
   * Returns the notifiers that got a message, and the earliest time another group becomes ready.
   */
  groupReady(now: number, groupWaitMs: number, maxItems = 500): { notifiers: string[]; nextReadyAt: number | null } {
    return this.db.transaction(() => {
      const notifiers: string[] = [];
      let nextReadyAt: number | null = null;
      for (const head of this.s.queueHeads.all() as { notifier: string; oldest: number }[]) {
        const readyAt = head.oldest + groupWaitMs;
        if (readyAt > now) {
          nextReadyAt = nextReadyAt === null ? readyAt : Math.min(nextReadyAt, readyAt);
          continue;
        }
        const rows = this.s.queueOf.all(head.notifier, maxItems) as { id: number; created_at: number; item: string }[];
        const items = rows.flatMap((r) => {
          const item = parseRow<AlertItem>(r.item, (v) => typeof v.rule === 'string' && typeof v.status === 'string');
          if (item === undefined) this.unreadableRows += 1;
          return item === undefined ? [] : [item];
        });
        const message: NotificationMessage = { kind: 'alert', items, createdAt: now };
        if (items.length > 0) this.s.insertOutbox.run(head.notifier, now, JSON.stringify(message), now);
        this.s.dequeueUpTo.run(head.notifier, (rows.at(-1) as { id: number }).id);
        notifiers.push(head.notifier);
        if (rows.length === maxItems) nextReadyAt = now; // more left: go again at once
      }
      return { notifiers, nextReadyAt };
    })();
  }

  // --- outbox (the dispatcher's queue) -------------------------------------------------------

  due(notifier: string, now: number, limit: number): OutboxRow[] {
    const rows: OutboxRow[] = [];
    for (const r of this.s.due.all(notifier, now, limit) as OutboxDbRow[]) {
      const message = parseRow<NotificationMessage>(r.message, (v) => typeof v.kind === 'string' && Array.isArray(v.items));
      if (message === undefined) {
        // A damaged row must not block its notifier for ever: set it aside, visibly.
        this.unreadableRows += 1;
        this.markDead(r.id, now, 'unreadable outbox row (damaged JSON)');
        continue;
      }
      rows.push({ id: r.id, notifier: r.notifier, message, createdAt: r.created_at, attempts: r.attempts, nextAttemptAt: r.next_attempt_at });
    }
    return rows;
  }

  markDelivered(id: number, now: number): void {
    this.s.delivered.run(now, id);
  }

  markFailed(id: number, _now: number, error: string, nextAttemptAt: number): void {
    this.s.failed.run(error, nextAttemptAt, id);
  }

  markDead(id: number, now: number, error: string): void {
    this.s.dead.run(error, now, id);
  }

  enqueue(notifier: string, message: NotificationMessage, now: number): void {
    this.s.insertOutbox.run(notifier, now, JSON.stringify(message), now);
  }

  nextDue(notifier: string): number | null {
    return (this.s.nextDue.get(notifier) as number | null) ?? null;
  }

  /** The newest outbox messages created since `since` (at most `limit`), newest first: the notification log. */
  outboxSince(since: number, limit = 1000): OutboxEntry[] {
    return (this.s.outboxSince.all(since, limit) as (OutboxDbRow & { status: OutboxEntry['status']; last_error: string | null; done_at: number | null })[]).map((r) => ({
      id: r.id,
      notifier: r.notifier,
      createdAt: r.created_at,
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      lastError: r.last_error,
      doneAt: r.done_at,
      items: parseRow<NotificationMessage>(r.message, (v) => Array.isArray(v.items))?.items ?? [],
    }));
  }

  /** Per notifier: messages pending, dead and delivered in the outbox, plus items still grouping. */
  outboxStats(): OutboxStats[] {
    const stats = new Map<string, OutboxStats>();
    for (const r of this.s.outboxStats.all() as OutboxStats[]) stats.set(r.notifier, { ...r });
    for (const r of this.s.queuedCount.all() as { notifier: string; n: number }[]) {
      const s = stats.get(r.notifier) ?? { notifier: r.notifier, pending: 0, dead: 0, delivered: 0 };
      s.pending += r.n;
      stats.set(r.notifier, s);
    }
    return [...stats.values()].sort((a, b) => a.notifier.localeCompare(b.notifier));
  }

  /** Deletes finished outbox rows, transitions and ended silences older than `before`, in small batches. */
  prune(before: number): number {
    let total = 0;
    for (const stmt of [this.s.pruneOutbox, this.s.pruneTransitions, this.s.pruneSilences]) {
      for (let n = stmt.run(before).changes; n > 0; n = stmt.run(before).changes) total += n;
    }
    return total;
  }
}

function toSilence(row: SilenceRow): Silence {
  const boxes = parseJson<string[] | null>(row.boxes, null);
  const rules = parseJson<string[] | null>(row.rules, null);
  return {
    id: row.id,
    matchers: { ...(boxes ? { boxes } : {}), ...(rules ? { rules } : {}) },
    startsAt: row.starts_at,
    endsAt: row.ends_at,
    comment: row.comment,
    createdBy: row.created_by,
  };
}
