/**
 * Delivery by replicas (src/notify/dispatcher.ts with a replica's `leadership`): each replica's dispatcher sends
 * only the messages of the accounts it leads, stops sending the moment it no longer leads one
 * (the rest of its claimed batch goes to the next leader, each message once), and a claim refused
 * because the lease changed hands is reported, nothing sent. A real SQLite store shared by two
 * replicas' stores, a real Slack-style receiver.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fenceOf, type Fence, type Lease } from '../../src/domain/leases.js';
import { Dispatcher } from '../../src/notify/dispatcher.js';
import { createNotifier } from '../../src/notify/index.js';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { item } from '../notify/fixtures.js';
import { tempDir } from '../store/model.js';

const T = Date.parse('2026-05-01T09:00:00Z');
const TTL = 30_000;

describe('delivery by replicas, each for the accounts it leads', () => {
  let tmp: ReturnType<typeof tempDir>;
  let stores: [SqliteStore, SqliteStore];
  let slack: SlackReceiver;
  const clock = new FakeClock(T);

  beforeEach(async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'boxwatch.db');
    stores = [openStore(path), openStore(path)];
    slack = await startSlackReceiver();
  });
  afterEach(async () => {
    await slack.close();
    for (const s of stores) s.close();
    tmp.cleanup();
  });

  /** Queues one message per serial for `account`, as the grouper releases them. */
  function queue(account: string, serials: string[]): void {
    const q = stores[0].groupQueue<AlertItem, NotificationMessage>();
    for (const serial of serials) {
      q.enqueueItems([{ notifier: 'ops-slack', createdAt: T, item: item({ serial }) }], account);
      const rows = q.pending(10);
      q.release([{ notifier: 'ops-slack', ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: T } }], T);
    }
  }

  function dispatcher(store: SqliteStore, fences: () => readonly Fence[], options: { onLeaseLost?: (f: Fence) => void; onDelivered?: () => void } = {}): Dispatcher {
    return new Dispatcher({
      notifiers: [createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slack.url })],
      queue: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
      clock,
      leadership: { fences, lost: (f) => options.onLeaseLost?.(f) },
      onOutcome: (o) => {
        if (o.result === 'delivered') options.onDelivered?.();
      },
    });
  }

  const take = (store: SqliteStore, account: string, holder: string, now: number): Fence => fenceOf(store.leases.acquire(account, holder, now, TTL) as Lease & { holder: string });
  const sentSerials = (): string[] => slack.received.map((r) => JSON.stringify(r.body).match(/BX-\w+/)?.[0] ?? '?');

  it("each replica sends its own accounts' messages and no other's", async () => {
    queue('acme', ['BX-A1', 'BX-A2']);
    queue('globex', ['BX-G1']);
    const acme = take(stores[0], 'acme', 'a', T);
    const globex = take(stores[1], 'globex', 'b', T);
    await dispatcher(stores[0], () => [acme]).runAllOnce();
    expect(sentSerials()).toEqual(['BX-A1', 'BX-A2']);
    await dispatcher(stores[1], () => [globex]).runAllOnce();
    expect(sentSerials()).toEqual(['BX-A1', 'BX-A2', 'BX-G1']);
    // A replica that leads nothing sends nothing.
    queue('acme', ['BX-A3']);
    await dispatcher(stores[1], () => []).runAllOnce();
    expect(sentSerials()).toHaveLength(3);
  });

  it('a replica that steps down mid-batch sends nothing more; the next leader sends the rest, each message once', async () => {
    queue('acme', ['BX-1', 'BX-2', 'BX-3', 'BX-4']);
    const old = take(stores[0], 'acme', 'a', T);
    let led: Fence[] = [old];
    // The coordinator steps down (renewals failing) while the first message is being sent.
    await dispatcher(stores[0], () => led, { onDelivered: () => (led = []) }).runAllOnce();
    expect(sentSerials()).toEqual(['BX-1']);
    // The lease expires; replica b takes it over and sends the rest at once (no claim to wait out).
    const next = take(stores[1], 'acme', 'b', T + TTL);
    clock.set(T + TTL);
    await dispatcher(stores[1], () => [next]).runAllOnce();
    expect(sentSerials()).toEqual(['BX-1', 'BX-2', 'BX-3', 'BX-4']);
  });

  it('a claim with a lease that changed hands is refused and reported; nothing is sent', async () => {
    queue('acme', ['BX-1']);
    const stale = take(stores[0], 'acme', 'a', T);
    take(stores[1], 'acme', 'b', T + TTL); // a was frozen past its lease; b took it over
    const lost: Fence[] = [];
    await dispatcher(stores[0], () => [stale], { onLeaseLost: (f) => lost.push(f) }).runAllOnce();
    expect(lost).toEqual([stale]);
    expect(slack.received).toEqual([]);
  });
});
