/**
 * Write transactions that read first take the write lock at BEGIN (IMMEDIATE), so a CLI writer
 * next to the daemon waits (busy_timeout) instead of committing between the daemon's read and its
 * write, which would fail the daemon's transaction with SQLITE_BUSY_SNAPSHOT. The moment between
 * the read and the write is reached in two ways: through the damaged-row listener, which the store
 * calls while it reads (the group queue), and by running the CLI's write right after the first
 * read of a transaction returns (the cycle: a restarted daemon loads its write state first).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { alertKey } from '../../src/alerts/types.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { silentLogger } from '../../src/log.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { connectionOf } from '../helpers/sqlite.js';
import { okCycle, snap, tempDir } from './model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let tmp: ReturnType<typeof tempDir>;
let path: string;
let store: SqliteStore;
let cli: Database.Database;
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, 'boxwatch.db');
  store = openStore(path, { clock: new FakeClock(T0) });
  cli = new Database(path);
  cli.pragma('busy_timeout = 0'); // a writer that does not wait: it shows whether the lock is taken
});
afterEach(() => {
  cli.close();
  store.close();
  tmp.cleanup();
});

/** The CLI adds a silence; returns the SQLite error code it met, or 'ok'. */
function cliWrites(id: string): string {
  try {
    cli.prepare("INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES (?, '[\"BX-1\"]', NULL, 0, 1, 'cli', NULL, 0)").run(id);
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

/**
 * Runs `during` once, right after the first statement that reads a table inside one of the store's
 * transactions has returned: the moment between a transaction's first read and its first write.
 * In a deferred transaction a writer that commits then makes the transaction's later write fail
 * with SQLITE_BUSY_SNAPSHOT; in an immediate one the writer is kept waiting.
 */
function afterFirstReadInTransaction(store: SqliteStore, during: () => void): void {
  const db = connectionOf(store);
  const statement = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<'get' | 'all' | 'iterate', (...args: unknown[]) => unknown>;
  let done = false;
  for (const method of ['get', 'all', 'iterate'] as const) {
    const original = statement[method];
    vi.spyOn(statement, method).mockImplementation(function (this: Database.Statement, ...args: unknown[]) {
      const result = original.apply(this, args);
      if (!done && this.database === db && db.inTransaction && this.reader && !/^\s*PRAGMA/i.test(this.source)) {
        done = true;
        during();
      }
      return result;
    });
  }
}

describe('IMMEDIATE write transactions next to a CLI writer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('the group queue read (which deletes the damaged items it meets) holds the write lock from its start', () => {
    const queue = store.groupQueue<AlertItem, NotificationMessage>();
    connectionOf(store).prepare("INSERT INTO notification_queue (notifier, created_at, item) VALUES ('mail', ?, '{broken')").run(T0);
    const met: string[] = [];
    store.damagedRows.report(silentLogger, () => met.push(cliWrites('during-read')));
    expect(queue.pending(10)).toEqual([]);
    expect(met).toEqual(['SQLITE_BUSY']); // the CLI waited for the daemon; it did not slip in between
    expect(cliWrites('after')).toBe('ok');
    expect(connectionOf(store).prepare('SELECT COUNT(*) FROM notification_queue').pluck().get()).toBe(0);
  });

  it('a cycle holds the write lock while it reads the alert stage view, and commits whole', () => {
    store.recordCycle(okCycle(T0, [snap('BX-1')]));
    connectionOf(store)
      .prepare("INSERT INTO alert_states (key, rule, serial, status, state) VALUES (?, 'box-offline', 'BX-1', 'firing', '{broken')")
      .run(alertKey('box-offline', 'BX-1'));
    const met: string[] = [];
    store.damagedRows.report(silentLogger, () => met.push(cliWrites('during-cycle')));
    const { recorded } = store.commitCycle(okCycle(T0 + 30_000, [snap('BX-1')]), T0 + 30_000, (view) => ({
      alerts: { states: view.states, dropped: [], transitions: [], queued: [] },
      result: null,
    }));
    expect(met).toEqual(['SQLITE_BUSY']);
    expect(recorded.startedAt).toBe(T0 + 30_000);
    expect(store.lastCycle()?.startedAt).toBe(T0 + 30_000);
    expect(cliWrites('after')).toBe('ok');
  });

  it('the first cycle after a restart, which reads the write state before it writes, holds the write lock from its start', () => {
    store.recordCycle(okCycle(T0, [snap('BX-1'), snap('BX-2')]));
    store.close();
    store = openStore(path, { clock: new FakeClock(T0 + 30_000) }); // the restart: the write state is read at the next cycle
    const met: string[] = [];
    afterFirstReadInTransaction(store, () => met.push(cliWrites('during-cycle')));
    const { recorded } = store.commitCycle(okCycle(T0 + 30_000, [snap('BX-1'), snap('BX-2')]), T0 + 30_000, (view) => ({
      alerts: { states: view.states, dropped: [], transitions: [], queued: [] },
      result: null,
    }));
    expect(met).toEqual(['SQLITE_BUSY']); // the CLI waited; with a deferred transaction it commits here and the cycle fails with SQLITE_BUSY_SNAPSHOT
    expect(recorded.startedAt).toBe(T0 + 30_000);
    expect(store.lastCycle()?.startedAt).toBe(T0 + 30_000);
    expect(store.boxes().map((b) => b.lastPolled)).toEqual([T0 + 30_000, T0 + 30_000]);
    expect(cliWrites('after')).toBe('ok');
  });
});
