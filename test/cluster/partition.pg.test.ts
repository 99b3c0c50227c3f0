/**
 * A partition, with the real pieces on a real PostgreSQL server: two replicas, each its own store
 * (connection pool), coordinator (src/cluster/coordinator.ts, real clock, 3 s leases) and fenced
 * dispatcher delivering to a real Slack-style receiver. The leader reaches the database through a
 * TCP proxy (test/helpers/tcp-proxy.ts); the test cuts it (packets dropped: calls hang, or
 * connections reset). The leader must step down, the other replica take the account over once the
 * lease expired, and every message be delivered exactly once: the cut leader sends nothing more.
 * The step-down and takeover times are printed (no timing is asserted).
 */
import { afterEach, beforeAll, afterAll, expect, it } from 'vitest';
import { Coordinator } from '../../src/cluster/coordinator.js';
import type { Fence } from '../../src/domain/leases.js';
import { systemClock } from '../../src/clock.js';
import { Dispatcher } from '../../src/notify/dispatcher.js';
import { createNotifier } from '../../src/notify/index.js';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { item } from '../notify/fixtures.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/wait.js';

const LEASE = 3_000;
const ACCOUNT = 'acme';

interface Replica {
  id: string;
  store: PostgresStore;
  coordinator: Coordinator;
  dispatcher: Dispatcher;
  delivered: number;
}

async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<number> {
  await until(what, cond, { timeoutMs, everyMs: 50 });
  return Date.now();
}

describeWithPostgres('a partition between the leader and PostgreSQL', () => {
  let server: PostgresServer;
  let proxy: TcpProxy | undefined;
  let slack: SlackReceiver | undefined;
  let replicas: Replica[] = [];
  let feeder: PostgresStore | undefined;

  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());
  afterEach(async () => {
    await proxy?.close(); // the cut connections fail now, so nothing hangs on them
    await Promise.all(replicas.map(async (r) => {
      await r.dispatcher.stop();
      await r.coordinator.stop();
      await r.store.close().catch(() => undefined);
    }));
    await feeder?.close();
    await slack?.close();
    replicas = [];
  });

  async function replica(id: string, url: string, slackUrl: string): Promise<Replica> {
    const store = await PostgresStore.open(url, { connectTimeoutMs: 1_000 });
    const r = { id, store, delivered: 0 } as Replica;
    const fences = (): Fence[] => r.coordinator.leading().flatMap((a) => r.coordinator.fence(a) ?? []);
    r.dispatcher = new Dispatcher({
      notifiers: [createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slackUrl })],
      queue: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
      clock: systemClock,
      pollIntervalMs: 100,
      leadership: { fences, lost: () => {} },
      onOutcome: (o) => {
        if (o.result === 'delivered') r.delivered += 1;
      },
    });
    r.coordinator = new Coordinator({
      repo: store.leases,
      replica: { id, host: 'localhost', pid: process.pid },
      accounts: () => [ACCOUNT],
      clock: systemClock,
      leaseMs: LEASE,
      work: { start: () => r.dispatcher.wake(), stop: async () => undefined },
    });
    r.coordinator.start();
    r.dispatcher.start();
    return r;
  }

  it.each(['blackhole', 'reset'] as const)('the cut leader (%s) steps down, the other takes over after the lease, every message is delivered once', async (mode) => {
    const url = await server.cleanDatabase(`partition_${mode}`);
    proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
    slack = await startSlackReceiver();
    feeder = await PostgresStore.open(url);
    const queue = feeder.groupQueue<AlertItem, NotificationMessage>();
    let n = 0;
    /** Queues the next message of the account, as the leader's grouper releases it. */
    const send = async (): Promise<void> => {
      n += 1;
      await queue.enqueueItems([{ notifier: 'ops-slack', createdAt: Date.now(), item: item({ serial: `BX-${n}` }) }], undefined, ACCOUNT);
      const rows = await queue.pending(10);
      await queue.release([{ notifier: 'ops-slack', ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: Date.now() } }], Date.now());
      for (const r of replicas) r.dispatcher.wake();
    };

    const a = await replica('replica-a', url.replace(`:${server.port}/`, `:${proxy.port}/`), slack.url);
    replicas.push(a);
    await waitUntil('a leads the account', () => a.coordinator.holds(ACCOUNT));
    const b = await replica('replica-b', url, slack.url);
    replicas.push(b);

    for (let i = 0; i < 5; i++) await send();
    await waitUntil('the first five messages are delivered', () => a.delivered + b.delivered === 5);
    expect(a.delivered).toBe(5);

    const cutAt = Date.now();
    proxy.cut(mode);
    const [lease] = await feeder.leases.leases(); // a's last renewal: it renews no more
    // Messages keep coming: while the cut leader still holds the lease, between its step-down and the takeover, and after.
    await send();
    await send();
    const stepDownAt = await waitUntil('a steps down', () => a.coordinator.leading().length === 0);
    await send();
    await send();
    const takeoverAt = await waitUntil('b leads the account', () => b.coordinator.holds(ACCOUNT));
    await send();
    await waitUntil('all ten messages are delivered', () => slack!.received.length >= 10 && b.delivered >= 5);
    await b.dispatcher.runOnce('ops-slack'); // one more pass of the leader: a second copy it owed would go out now

    const serials = slack.received.map((r) => JSON.stringify(r.body).match(/BX-\d+/)?.[0]);
    expect([...serials].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `BX-${i + 1}`).sort());
    expect(a.delivered).toBe(5); // nothing more sent by the cut leader
    expect(b.delivered).toBe(5);
    const [after] = await feeder.leases.leases();
    expect(after?.holder).toBe('replica-b');
    expect(after!.token).toBeGreaterThan(lease!.token);
    expect(takeoverAt).toBeGreaterThanOrEqual(lease!.expiresAt); // not before the cut leader's lease ran out
    console.log(
      `partition (${mode}), lease ${LEASE} ms: the leader stepped down ${stepDownAt - cutAt} ms after the cut ` +
        `(${lease!.expiresAt - stepDownAt} ms before its lease expired); the other replica led the account ${takeoverAt - cutAt} ms after the cut`,
    );
  }, 90_000);
});
