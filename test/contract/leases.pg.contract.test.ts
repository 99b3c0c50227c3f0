/**
 * The lease and fencing contracts (leases.contract.ts) against PostgreSQL, on a real throwaway
 * server (one cluster for this file, a database per suite, emptied for each test): two stores
 * (two replicas' pools) on one database. Plus what only a server shows: a takeover waits for a
 * fenced write in flight, and that write's old holder is refused afterwards.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseLostError, fenceOf, type Lease } from '../../src/domain/leases.js';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { checkFence } from '../../src/store/postgres/leases.js';
import { CYCLE_WRITE_LOCK } from '../../src/store/postgres/store.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { okCycle, snap } from '../store/model.js';
import { fencingContract, leasesContract } from './leases.contract.js';
import { until } from '../helpers/wait.js';

describeWithPostgres('PostgreSQL leases', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  leasesContract('PostgreSQL, two stores on one database', async () => {
    const url = await server.cleanDatabase('leases');
    const stores = [await PostgresStore.open(url), await PostgresStore.open(url)] as const;
    return {
      handles: [stores[0].leases, stores[1].leases],
      close: async () => {
        for (const s of stores) await s.close();
      },
    };
  });

  fencingContract('PostgreSQL', async () => {
    const store = await PostgresStore.open(await server.cleanDatabase('fencing'));
    return {
      leases: store.leases,
      committer: store,
      queue: store.groupQueue<AlertItem, NotificationMessage>(),
      outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
      close: () => store.close(),
    };
  });

  it("a takeover waits for the old holder's fenced write in flight; after it, the old holder writes nothing", async () => {
    const url = await server.cleanDatabase('inflight');
    const [a, b] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    await client.connect();
    await watcher.connect();
    try {
      const T = Date.parse('2026-05-01T09:00:00Z');
      const old = fenceOf((await a.leases.acquire('acme', 'replica-a', T, 30_000)) as Lease & { holder: string });
      // A's write has checked its fence and is still writing (its transaction open) when its lease expires.
      await client.query('BEGIN');
      await checkFence({ query: async <R extends object>(sql: string, params?: readonly unknown[]) => (await client.query<R>(sql, params as unknown[])).rows }, old);
      let tookOver = false;
      const takeover = b.leases.acquire('acme', 'replica-b', T + 30_000, 30_000).then((l) => {
        tookOver = true;
        return l;
      });
      await until('the takeover waiting for a lock', async () => (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).rows.length > 0);
      expect(tookOver).toBe(false); // the takeover waits for A's transaction
      await client.query('COMMIT');
      expect((await takeover)?.holder).toBe('replica-b');
      await expect(a.commitCycle(okCycle(T + 30_000, [snap('BX-1', { lastSeen: T + 30_000 })]), T + 30_000, () => ({ alerts: { states: new Map(), dropped: [], transitions: [], queued: [] }, result: null }), old)).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      expect(await b.lastCycle()).toBeUndefined();
    } finally {
      await client.end();
      await watcher.end();
      await a.close();
      await b.close();
    }
  });

  it("a fenced cycle write waiting for another replica's cycle write does not hold up the renewal of its lease", async () => {
    const url = await server.cleanDatabase('renewal');
    const a = await PostgresStore.open(url);
    const { default: pg } = await import('pg');
    const other = new pg.Client({ connectionString: url }); // another replica's cycle write, in flight
    const watcher = new pg.Client({ connectionString: url });
    await other.connect();
    await watcher.connect();
    /** Resolves once a statement starting with `sql` waits for a lock (pg_stat_activity), or never. */
    let watching = true;
    const waitingFor = async (sql: string): Promise<void> => {
      const seen = await until(
        `"${sql}" waiting for a lock`,
        async () => (!watching ? 'stopped' : (await watcher.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", [`${sql}%`])).rows.length > 0 && 'waiting'),
        { timeoutMs: 60_000 },
      );
      if (seen === 'stopped') await new Promise(() => undefined);
    };
    try {
      const T = Date.parse('2026-05-01T09:00:00Z');
      const fence = fenceOf((await a.leases.acquire('acme', 'replica-a', T, 30_000)) as Lease & { holder: string });
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1)', [CYCLE_WRITE_LOCK]);
      const write = a.commitCycle(okCycle(T + 5_000, [snap('acme/BX-1', { lastSeen: T + 5_000 })]), T + 5_000, () => ({ alerts: { states: new Map(), dropped: [], transitions: [], queued: [] }, result: null }), fence);
      await waitingFor('SELECT pg_advisory_xact_lock');
      // The renewal goes through while A's write waits for the other one.
      const renewal = a.leases.renew(fence, T + 10_000, 30_000).then((l) => l?.expiresAt);
      expect(await Promise.race([renewal, waitingFor('UPDATE leases').then(() => 'the renewal waits for the cycle write')])).toBe(T + 40_000);
      await other.query('COMMIT');
      await write; // and the write, its fence still good, is stored
      expect((await a.lastCycle())?.startedAt).toBe(T + 5_000);
    } finally {
      watching = false;
      await other.end();
      await watcher.end();
      await a.close();
    }
  });
});
