/**
 * An in-memory OutboxRepository with the semantics the SQLite outbox has (the contract suite,
 * test/contract/outbox.contract.ts, runs against both): pending rows due at `nextAttemptAt`,
 * oldest first, claimed as `sending` until their lease ends; delivered and dead rows are never
 * returned again; dead rows are reported once. Messages are stored as JSON, as a database column
 * would hold them.
 */
import type { OutboxRepository, OutboxRow, OutboxStats, UnreportedFailures } from '../../src/domain/outbox.js';
import type { NotificationMessage } from '../../src/domain/notifications.js';

export interface StoredRow {
  id: number;
  notifier: string;
  json: string;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
  state: 'pending' | 'sending' | 'delivered' | 'dead';
  leaseUntil: number | null;
  lastError: string | null;
  doneAt: number | null;
  reportedAt: number | null;
}

export class MemoryOutbox implements OutboxRepository {
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
      leaseUntil: null,
      lastError: null,
      doneAt: null,
      reportedAt: null,
    });
  }

  claim(notifier: string, now: number, limit: number, leaseMs: number): OutboxRow[] {
    const claimable = (r: StoredRow): boolean =>
      r.notifier === notifier && ((r.state === 'pending' && r.nextAttemptAt <= now) || (r.state === 'sending' && (r.leaseUntil as number) <= now));
    const out: OutboxRow[] = [];
    for (const r of this.rows.filter(claimable).sort((a, b) => a.id - b.id).slice(0, limit)) {
      let message: NotificationMessage;
      try {
        message = JSON.parse(r.json) as NotificationMessage;
      } catch {
        this.markDead(r.id, now, 'unreadable outbox row (damaged JSON)', { report: false });
        continue;
      }
      r.state = 'sending';
      r.leaseUntil = now + leaseMs;
      out.push({ id: r.id, notifier: r.notifier, message, createdAt: r.createdAt, attempts: r.attempts, nextAttemptAt: r.nextAttemptAt });
    }
    return out;
  }

  unclaim(ids: readonly number[]): void {
    for (const id of ids) {
      const r = this.get(id);
      if (r.state !== 'sending') continue;
      r.state = 'pending';
      r.leaseUntil = null;
    }
  }

  markDelivered(id: number, now: number): void {
    const r = this.get(id);
    r.state = 'delivered';
    r.leaseUntil = null;
    r.doneAt = now;
  }

  markFailed(id: number, _now: number, error: string, nextAttemptAt: number): void {
    const r = this.get(id);
    r.state = 'pending';
    r.leaseUntil = null;
    r.attempts += 1;
    r.lastError = error;
    r.nextAttemptAt = nextAttemptAt;
  }

  markDead(id: number, now: number, error: string, options: { report?: boolean } = {}): void {
    const r = this.get(id);
    r.attempts += 1;
    r.lastError = error;
    r.state = 'dead';
    r.leaseUntil = null;
    r.doneAt = now;
    r.reportedAt = options.report === false ? now : null;
  }

  nextDue(notifier: string): number | null {
    const times = this.rows
      .filter((r) => r.notifier === notifier && (r.state === 'pending' || r.state === 'sending'))
      .map((r) => (r.state === 'pending' ? r.nextAttemptAt : (r.leaseUntil as number)));
    return times.length === 0 ? null : Math.min(...times);
  }

  unreportedFailures(): UnreportedFailures[] {
    const byNotifier = new Map<string, StoredRow[]>();
    for (const r of this.rows) if (r.state === 'dead' && r.reportedAt === null) byNotifier.set(r.notifier, [...(byNotifier.get(r.notifier) ?? []), r]);
    return [...byNotifier]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([notifier, rows]) => {
        const reported = this.rows.filter((r) => r.notifier === notifier && r.reportedAt !== null).map((r) => r.reportedAt as number);
        const newest = rows[rows.length - 1] as StoredRow;
        return {
          notifier,
          dead: rows.length,
          failingSince: Math.min(...rows.map((r) => r.createdAt)),
          lastError: newest.lastError ?? '',
          upToId: newest.id,
          lastReportedAt: reported.length === 0 ? null : Math.max(...reported),
        };
      });
  }

  report(reported: readonly { notifier: string; upToId: number }[], notices: readonly { notifier: string; message: NotificationMessage }[], now: number): boolean {
    let marked = 0;
    for (const { notifier, upToId } of reported) {
      for (const r of this.rows) {
        if (r.notifier !== notifier || r.state !== 'dead' || r.reportedAt !== null || r.id > upToId) continue;
        r.reportedAt = now;
        marked += 1;
      }
    }
    if (marked === 0) return false;
    for (const n of notices) this.enqueue(n.notifier, n.message, now);
    return true;
  }

  retire(keep: readonly string[], now: number, reason: (notifier: string) => string): number {
    let marked = 0;
    for (const r of this.rows) {
      if (keep.includes(r.notifier) || (r.state !== 'pending' && r.state !== 'sending')) continue;
      r.state = 'dead';
      r.leaseUntil = null;
      r.lastError = reason(r.notifier);
      r.doneAt = now;
      r.reportedAt = null;
      marked += 1;
    }
    return marked;
  }

  stats(): OutboxStats[] {
    const stats = new Map<string, OutboxStats>();
    for (const r of this.rows) {
      const s = stats.get(r.notifier) ?? { notifier: r.notifier, pending: 0, dead: 0, delivered: 0 };
      if (r.state === 'pending' || r.state === 'sending') s.pending += 1;
      else if (r.state === 'dead') s.dead += 1;
      else s.delivered += 1;
      stats.set(r.notifier, s);
    }
    return [...stats.values()].sort((a, b) => a.notifier.localeCompare(b.notifier));
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
