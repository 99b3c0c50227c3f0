/**
 * The contract of OutboxRepository (src/domain/outbox.ts), as a suite any implementation runs:
 * `outboxContract('SQLite', factory)`. Every call is awaited (implementations may answer with a
 * Promise). Run by outbox.contract.test.ts against the in-memory outbox and the SQLite one; a
 * PostgreSQL outbox adds one line there. `sharedDeliveryContract` holds the dispatcher over two
 * handles on one outbox to "every message is sent once".
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Dispatcher } from '../../src/notify/dispatcher.js';
import { createNotifier } from '../../src/notify/index.js';
import type { OutboxRepository } from '../../src/domain/outbox.js';
import type { NotificationMessage } from '../../src/domain/notifications.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { item, message } from '../notify/fixtures.js';

export interface OutboxFixture {
  outbox: OutboxRepository;
  /** Adds a row of `notifier`, due at `now`, whose stored message is unreadable (damaged JSON). */
  plantDamaged(notifier: string, now: number): void | Promise<void>;
  close(): void | Promise<void>;
}

const T = Date.parse('2026-05-01T09:00:00Z');
const LEASE = 60_000;
const msg = (serial: string): NotificationMessage => message([item({ serial })], T);
const serialsOf = (rows: { message: NotificationMessage }[]): string[] => rows.map((r) => r.message.items[0]?.serial ?? '?');

export function outboxContract(name: string, make: () => OutboxFixture | Promise<OutboxFixture>): void {
  describe(`OutboxRepository contract: ${name}`, () => {
    let f: OutboxFixture;
    let outbox: OutboxRepository;
    beforeEach(async () => {
      f = await make();
      outbox = f.outbox;
    });
    afterEach(async () => {
      await f.close();
    });

    it('claims due rows of one notifier, oldest first, up to the limit, with their message as queued', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      await outbox.enqueue('slack', msg('B'), T);
      await outbox.enqueue('mail', msg('C'), T + 1);
      await outbox.enqueue('mail', msg('D'), T + 2);
      const rows = await outbox.claim('mail', T + 10, 2, LEASE);
      expect(serialsOf(rows)).toEqual(['A', 'C']);
      expect(rows[0]).toMatchObject({ notifier: 'mail', createdAt: T, attempts: 0, nextAttemptAt: T });
      expect(rows[0]!.message).toEqual(msg('A'));
      expect(rows[0]!.id).toBeLessThan(rows[1]!.id);
    });

    it('a claimed row goes to no other claim until its lease ends, then to the next one', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      expect(await outbox.claim('mail', T, 10, LEASE)).toHaveLength(1);
      expect(await outbox.claim('mail', T, 10, LEASE)).toEqual([]);
      expect(await outbox.claim('mail', T + LEASE - 1, 10, LEASE)).toEqual([]);
      expect(serialsOf(await outbox.claim('mail', T + LEASE, 10, LEASE))).toEqual(['A']);
    });

    it('rows not yet due are not claimed', async () => {
      await outbox.enqueue('mail', msg('A'), T + 5_000);
      expect(await outbox.claim('mail', T, 10, LEASE)).toEqual([]);
      expect(await outbox.claim('mail', T + 5_000, 10, LEASE)).toHaveLength(1);
    });

    it('unclaimed rows are due again at once', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      await outbox.enqueue('mail', msg('B'), T);
      const rows = await outbox.claim('mail', T, 10, LEASE);
      await outbox.unclaim(rows.map((r) => r.id));
      expect(serialsOf(await outbox.claim('mail', T, 10, LEASE))).toEqual(['A', 'B']);
    });

    it('delivered rows are never claimed again and count as delivered', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      const [row] = await outbox.claim('mail', T, 10, LEASE);
      await outbox.markDelivered(row!.id, T + 1);
      expect(await outbox.claim('mail', T + 10 * LEASE, 10, LEASE)).toEqual([]);
      expect(await outbox.nextDue('mail')).toBeNull();
      expect(await outbox.stats()).toEqual([{ notifier: 'mail', pending: 0, dead: 0, delivered: 1 }]);
    });

    it('a failed row is pending again from its next attempt, with one more attempt counted', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      const [row] = await outbox.claim('mail', T, 10, LEASE);
      await outbox.markFailed(row!.id, T + 1, 'connection refused', T + 30_000);
      expect(await outbox.nextDue('mail')).toBe(T + 30_000);
      expect(await outbox.claim('mail', T + 29_999, 10, LEASE)).toEqual([]);
      const [again] = await outbox.claim('mail', T + 30_000, 10, LEASE);
      expect(again).toMatchObject({ id: row!.id, attempts: 1, nextAttemptAt: T + 30_000 });
      expect(await outbox.stats()).toEqual([{ notifier: 'mail', pending: 1, dead: 0, delivered: 0 }]);
    });

    it('nextDue is the earliest next attempt or lease end; null with nothing waiting', async () => {
      expect(await outbox.nextDue('mail')).toBeNull();
      await outbox.enqueue('mail', msg('A'), T);
      await outbox.claim('mail', T, 10, LEASE);
      expect(await outbox.nextDue('mail')).toBe(T + LEASE);
      await outbox.enqueue('mail', msg('B'), T + 100);
      expect(await outbox.nextDue('mail')).toBe(T + 100);
      expect(await outbox.nextDue('slack')).toBeNull();
    });

    it('dead rows are never claimed; unreported ones are listed once per notifier until reported', async () => {
      for (const s of ['A', 'B', 'C']) await outbox.enqueue('slack', msg(s), T + s.charCodeAt(0));
      const rows = await outbox.claim('slack', T + 1_000, 10, LEASE);
      await outbox.markDead(rows[0]!.id, T + 2_000, 'HTTP 404');
      await outbox.markDead(rows[1]!.id, T + 2_001, 'HTTP 410');
      await outbox.markDelivered(rows[2]!.id, T + 2_002);
      expect(await outbox.claim('slack', T + 10 * LEASE, 10, LEASE)).toEqual([]);
      const failures = await outbox.unreportedFailures();
      expect(failures).toEqual([{ notifier: 'slack', dead: 2, failingSince: T + 65, lastError: 'HTTP 410', upToId: rows[1]!.id, lastReportedAt: null }]);

      const notice: NotificationMessage = { kind: 'delivery_failure', items: [], failures: [{ notifier: 'slack', failingSince: T + 65, dead: 2, lastError: 'HTTP 410' }], createdAt: T + 3_000 };
      await outbox.report([{ notifier: 'slack', upToId: rows[1]!.id }], [{ notifier: 'mail', message: notice }], T + 3_000);
      expect(await outbox.unreportedFailures()).toEqual([]);
      const [queued] = await outbox.claim('mail', T + 3_000, 10, LEASE);
      expect(queued!.message).toEqual(notice);

      // A later failure is listed with when the notifier was last reported.
      await outbox.enqueue('slack', msg('D'), T + 4_000);
      const [d] = await outbox.claim('slack', T + 4_000, 10, LEASE);
      await outbox.markDead(d!.id, T + 4_001, 'HTTP 404');
      expect(await outbox.unreportedFailures()).toEqual([{ notifier: 'slack', dead: 1, failingSince: T + 4_000, lastError: 'HTTP 404', upToId: d!.id, lastReportedAt: T + 3_000 }]);
      expect(await outbox.stats()).toEqual([
        { notifier: 'mail', pending: 1, dead: 0, delivered: 0 },
        { notifier: 'slack', pending: 0, dead: 3, delivered: 1 },
      ]);
    });

    it('failures already reported (by another replica that read the same list) are not announced again', async () => {
      for (const s of ['A', 'B']) await outbox.enqueue('slack', msg(s), T + s.charCodeAt(0));
      for (const row of await outbox.claim('slack', T + 1_000, 10, LEASE)) await outbox.markDead(row.id, T + 2_000, 'HTTP 404');
      const [failure] = await outbox.unreportedFailures(); // what both replicas read
      const notice: NotificationMessage = { kind: 'delivery_failure', items: [], failures: [{ notifier: 'slack', failingSince: failure!.failingSince, dead: 2, lastError: 'HTTP 404' }], createdAt: T + 3_000 };
      const report = () => outbox.report([{ notifier: 'slack', upToId: failure!.upToId }], [{ notifier: 'mail', message: notice }], T + 3_000);
      // At the same time, then once more late: one notice.
      expect((await Promise.all([report(), report()])).sort()).toEqual([false, true]);
      expect(await report()).toBe(false);
      expect(await outbox.claim('mail', T + 3_000, 10, LEASE)).toHaveLength(1);
      expect(await outbox.unreportedFailures()).toEqual([]);
    });

    it('a row given up with report: false is not listed as a failure to report', async () => {
      await outbox.enqueue('mail', msg('A'), T);
      const [row] = await outbox.claim('mail', T, 10, LEASE);
      await outbox.markDead(row!.id, T + 1, 'HTTP 400', { report: false });
      expect(await outbox.unreportedFailures()).toEqual([]);
    });

    it('retire marks the waiting rows of notifiers no longer kept dead with the reason, once, to be reported', async () => {
      await outbox.enqueue('old', msg('A'), T);
      await outbox.enqueue('old', msg('B'), T);
      await outbox.enqueue('old', msg('C'), T);
      await outbox.enqueue('mail', msg('D'), T);
      const [a] = await outbox.claim('old', T, 1, LEASE); // one being sent
      const [b] = await outbox.claim('old', T, 1, LEASE);
      await outbox.markDelivered(b!.id, T + 1); // one delivered: stays delivered
      const marked = await outbox.retire(['mail'], T + 10, (n) => `notifier "${n}" is no longer configured`);
      expect(marked).toBe(2);
      expect(await outbox.retire(['mail'], T + 20, (n) => `notifier "${n}" is no longer configured`)).toBe(0);
      expect(await outbox.claim('old', T + 10 * LEASE, 10, LEASE)).toEqual([]);
      expect(await outbox.nextDue('old')).toBeNull();
      const [failure] = await outbox.unreportedFailures();
      expect(failure).toMatchObject({ notifier: 'old', dead: 2, lastError: 'notifier "old" is no longer configured' });
      expect(failure!.upToId).toBeGreaterThan(a!.id);
      expect(await outbox.stats()).toEqual([
        { notifier: 'mail', pending: 1, dead: 0, delivered: 0 },
        { notifier: 'old', pending: 0, dead: 2, delivered: 1 },
      ]);
    });

    it('a damaged row is set aside (dead) instead of blocking its notifier; the rows after it are claimed', async () => {
      await f.plantDamaged('mail', T);
      await outbox.enqueue('mail', msg('A'), T);
      expect(serialsOf(await outbox.claim('mail', T, 10, LEASE))).toEqual(['A']);
      expect(await outbox.stats()).toEqual([{ notifier: 'mail', pending: 1, dead: 1, delivered: 0 }]);
      expect(await outbox.unreportedFailures()).toEqual([]); // lost data, not a failing notifier: counted as a damaged row instead
    });
  });
}

export interface SharedOutboxFixture {
  /** Two handles on the same stored outbox, as two processes (or two passes) would hold it. */
  handles: [OutboxRepository, OutboxRepository];
  close(): void | Promise<void>;
}

/**
 * Delivery through the outbox: any number of delivery passes, in one process or two, send each
 * message once (the claims with a lease). A real Slack-style receiver counts the requests.
 */
export function sharedDeliveryContract(name: string, make: () => SharedOutboxFixture | Promise<SharedOutboxFixture>): void {
  describe(`delivery passes over one outbox: ${name}`, () => {
    let f: SharedOutboxFixture;
    let slack: SlackReceiver;
    beforeEach(async () => {
      f = await make();
      slack = await startSlackReceiver();
    });
    afterEach(async () => {
      await slack.close();
      await f.close();
    });

    it('two dispatchers delivering the same outbox at once send every message once', async () => {
      const clock = new FakeClock(T);
      const [first, second] = f.handles;
      for (let i = 0; i < 6; i++) await first.enqueue('ops-slack', msg(`SN-${i}`), T);
      slack.delay(20); // both passes are in flight together
      const dispatchers = f.handles.map(
        (queue) => new Dispatcher({ notifiers: [createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slack.url })], queue, clock, batchSize: 3 }),
      );
      await Promise.all([dispatchers[0]!.runAllOnce(), dispatchers[1]!.runAllOnce(), dispatchers[0]!.runAllOnce(), dispatchers[1]!.runAllOnce()]);
      const texts = slack.received.map((r) => JSON.stringify(r.body));
      expect(texts).toHaveLength(6);
      for (let i = 0; i < 6; i++) expect(texts.filter((t) => t.includes(`SN-${i}`))).toHaveLength(1);
      expect(await second.stats()).toEqual([{ notifier: 'ops-slack', pending: 0, dead: 0, delivered: 6 }]);
      await Promise.all(dispatchers.map((d) => d.close()));
    });
  });
}
