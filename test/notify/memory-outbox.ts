/**
 * An in-memory OutboxQueue with the semantics the SQLite outbox must have: pending rows due at
 * `nextAttemptAt`, oldest first; delivered and dead rows are never returned again. Messages are
 * stored as JSON, as a database column would hold them.
 */
import type { OutboxQueue, OutboxRow } from '../../src/notify/dispatcher.js';
import type { NotificationMessage } from '../../src/notify/types.js';

export interface StoredRow {
  id: number;
  notifier: string;
  json: string;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
  state: 'pending' | 'delivered' | 'dead';
  lastError: string | null;
  doneAt: number | null;
}

export class MemoryOutbox implements OutboxQueue {
  readonly rows: StoredRow[] = [];
  private nextId = 1;

  enqueue(notifier: string, message: NotificationMessage, now: number): void {
    this.rows.push({
      id: this.nextId++,
      notifier,
      json: JSON.stringify(message),
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
      state: 'pending',
      lastError: null,
      doneAt: null,
    });
  }

  due(notifier: string, now: number, limit: number): OutboxRow[] {
    return this.rows
      .filter((r) => r.notifier === notifier && r.state === 'pending' && r.nextAttemptAt <= now)
      .sort((a, b) => a.id - b.id)
      .slice(0, limit)
      .map((r) => ({
        id: r.id,
        notifier: r.notifier,
        message: JSON.parse(r.json) as NotificationMessage,
        createdAt: r.createdAt,
        attempts: r.attempts,
        nextAttemptAt: r.nextAttemptAt,
      }));
  }

  markDelivered(id: number, now: number): void {
    const r = this.get(id);
    r.state = 'delivered';
    r.doneAt = now;
  }

  markFailed(id: number, _now: number, error: string, nextAttemptAt: number): void {
    const r = this.get(id);
    r.attempts += 1;
    r.lastError = error;
    r.nextAttemptAt = nextAttemptAt;
  }

  markDead(id: number, now: number, error: string): void {
    const r = this.get(id);
    r.attempts += 1;
    r.lastError = error;
    r.state = 'dead';
    r.doneAt = now;
  }

  nextDue(notifier: string): number | null {
    const pending = this.rows.filter((r) => r.notifier === notifier && r.state === 'pending');
    return pending.length === 0 ? null : Math.min(...pending.map((r) => r.nextAttemptAt));
  }

  of(notifier: string): StoredRow[] {
    return this.rows.filter((r) => r.notifier === notifier);
  }

  private get(id: number): StoredRow {
    const r = this.rows.find((x) => x.id === id);
    if (!r) throw new Error(`no row ${id}`);
    return r;
  }
}
