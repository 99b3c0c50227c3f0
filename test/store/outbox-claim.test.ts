/**
 * The claim an idle dispatcher asks every few seconds (src/notify/dispatcher.ts) on a SQLite
 * outbox that keeps its delivered rows for the retention period: it still finds the rows that wait
 * (due, or a send whose lease ended) among thousands of delivered ones, and SQLite reads them
 * through an index on their status (or the partial index of waiting rows, for a replica's claim
 * of one account) instead of reading every row of the notifier. A real SQLite file.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { NotificationMessage } from '../../src/domain/notifications.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { outboxStatements } from '../../src/store/sqlite/outbox.js';
import { connectionOf } from '../helpers/sqlite.js';
import { item, message } from '../notify/fixtures.js';
import { tempDir } from './model.js';

const T = Date.parse('2026-05-01T09:00:00Z');
const LEASE = 60_000;

let tmp: ReturnType<typeof tempDir>;
let store: SqliteStore;

beforeEach(() => {
  tmp = tempDir();
  store = openStore(join(tmp.dir, 'boxwatch.db'));
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

/** SQLite's plan of a statement, one line per step. */
function planOf(sql: string, params: unknown[]): string[] {
  return (connectionOf(store).prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
}

describe('claiming from a SQLite outbox full of delivered rows', () => {
  it('finds the waiting rows among 5,000 delivered ones, oldest first', async () => {
    const outbox = store.outbox<NotificationMessage>(looksLikeNotificationMessage);
    const msg = (serial: string): NotificationMessage => message([item({ serial })], T);
    for (let i = 0; i < 5_000; i++) {
      outbox.enqueue('mail', msg(`OLD-${i}`), T - 10_000);
    }
    const old = outbox.claim('mail', T - 10_000, 5_000, LEASE);
    for (const row of old) outbox.markDelivered(row.id, T - 9_000);
    outbox.enqueue('mail', msg('LEASED'), T - 2 * LEASE);
    expect(outbox.claim('mail', T - 2 * LEASE, 1, LEASE)).toHaveLength(1); // sending, its lease ends at T - LEASE
    outbox.enqueue('mail', msg('DUE'), T);
    outbox.enqueue('mail', msg('LATER'), T + 60_000);
    outbox.enqueue('slack', msg('OTHER'), T);

    expect(outbox.claim('mail', T, 10, LEASE).map((r) => r.message.items[0]?.serial)).toEqual(['LEASED', 'DUE']);
    expect(outbox.claim('mail', T, 10, LEASE)).toEqual([]);
  });

  it('reads the waiting rows through an index on their status, not every row of the notifier', () => {
    const s = outboxStatements(connectionOf(store));
    expect(planOf(s.claimable.source, ['mail', T, T, 1])).toContainEqual(expect.stringMatching(/USING INDEX outbox_pending \(notifier=\? AND status=\?\)/));
    // A replica's claim of one account: the partial index holds only the waiting rows.
    expect(planOf(s.claimableOf.source, ['acme', 'mail', T, T, 1])).toContainEqual(expect.stringMatching(/USING INDEX outbox_account/));
  });
});
