/**
 * What the PostgreSQL store does beyond the repository contracts (test/contract/), on a real
 * throwaway PostgreSQL server: connection failures as StoreErrors that never show the password,
 * migrations applied once by processes starting together and refused on a newer or foreign
 * database, several processes releasing the same group_wait batch send it once, and hostile text
 * PostgreSQL cannot hold (NUL) does not fail a write.
 */
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AlertWrite } from '../../src/alerts/repositories.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import { packageFile } from '../../src/package-files.js';
import { StoreError } from '../../src/store/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer, rawQuery } from '../helpers/postgres.js';
import { item } from '../notify/fixtures.js';
import { okCycle, snap } from './model.js';

const T = Date.parse('2026-05-01T09:00:00Z');

/** A port on which nothing listens. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 1));
    });
  });
}

async function rows<R>(url: string, sql: string): Promise<R[]> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as R[];
  } finally {
    await client.end();
  }
}

describeWithPostgres('PostgreSQL store', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  it('an unreachable database is a store_unavailable error naming it without the password', async () => {
    const url = `postgres://boxwatch:s3cret-Pa55@127.0.0.1:${await closedPort()}/fleet?sslmode=disable`;
    const err = await PostgresStore.open(url, { connectTimeoutMs: 2_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('store_unavailable');
    expect((err as StoreError).message).toMatch(/^cannot use the PostgreSQL database postgres:\/\/boxwatch@127\.0\.0\.1:\d+\/fleet: /);
    expect(JSON.stringify(err) + String((err as Error).stack)).not.toContain('s3cret-Pa55');
  });

  it('a database that does not exist is store_unavailable too, and the password stays out', async () => {
    const url = server.url('no_such_db').replace('postgres@', 'postgres:hunter2-pw@');
    const err = (await PostgresStore.open(url).catch((e: unknown) => e)) as StoreError;
    expect(err.code).toBe('store_unavailable');
    expect(err.message).toContain('no_such_db');
    expect(err.message).not.toContain('hunter2-pw');
  });

  it('processes starting together migrate once; a database migrated by a newer boxwatch is refused', async () => {
    const url = await server.createDatabase('migrate');
    const stores = await Promise.all([PostgresStore.open(url), PostgresStore.open(url), PostgresStore.open(url)]);
    await Promise.all(stores.map((s) => s.close()));
    const files = readdirSync(packageFile('migrations', 'postgres')).filter((f) => f.endsWith('.sql')).sort();
    expect(await rows<{ name: string }>(url, 'SELECT name FROM schema_migrations ORDER BY name')).toEqual(files.map((f) => ({ name: f.slice(0, -'.sql'.length) })));

    await rawQuery(url, "INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future', 0)");
    const err = (await PostgresStore.open(url).catch((e: unknown) => e)) as StoreError;
    expect(err.code).toBe('store_schema_newer');
    expect(err.message).toContain('9999_future');
  });

  it('a database holding tables named like ours that boxwatch did not create is refused, and left as it was', async () => {
    const url = await server.createDatabase('foreign');
    await rawQuery(url, 'CREATE TABLE silences (id int)');
    const err = (await PostgresStore.open(url).catch((e: unknown) => e)) as StoreError;
    expect(err.code).toBe('store_foreign');
    expect(await rows(url, "SELECT 1 FROM pg_tables WHERE tablename IN ('schema_migrations', 'outbox')")).toEqual([]);
  });

  it('two processes releasing the same group_wait batch put one message into the outbox', async () => {
    const url = await server.createDatabase('release');
    const [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
    const qa = a.groupQueue<AlertItem, NotificationMessage>();
    const qb = b.groupQueue<AlertItem, NotificationMessage>();
    await qa.enqueueItems([
      { notifier: 'mail', createdAt: T, item: item({ serial: 'SN-1' }) },
      { notifier: 'mail', createdAt: T, item: item({ serial: 'SN-2' }) },
    ]);
    const [pa, pb] = await Promise.all([qa.pending(10), qb.pending(10)]);
    const batch = (rowsOf: typeof pa) => [{ notifier: 'mail', ids: rowsOf.map((r) => r.id), message: { kind: 'alert' as const, items: rowsOf.map((r) => r.item), createdAt: T } }];
    await Promise.all([qa.release(batch(pa), T + 1), qb.release(batch(pb), T + 1)]);
    const outbox = a.outbox<NotificationMessage>(looksLikeNotificationMessage);
    const claimed = await outbox.claim('mail', T + 1, 10, 60_000);
    expect(claimed.map((r) => r.message.items.map((i) => i.serial))).toEqual([['SN-1', 'SN-2']]);
    expect(await qb.pending(10)).toEqual([]);
    await Promise.all([a.close(), b.close()]);
  });

  it('text PostgreSQL cannot hold (a NUL from a hostile box name) fails neither the history nor the alert stage', async () => {
    const url = await server.createDatabase('nul');
    const store = await PostgresStore.open(url);
    const write: AlertWrite<AlertItem> = {
      states: new Map(),
      dropped: [],
      transitions: [{ key: 'box-offline\u0000SN-1', rule: 'box-offline', kind: 'disconnected', serial: 'SN-1', severity: 'critical', from: 'inactive', to: 'firing', at: T, value: 0, threshold: null, summary: 'Lobby\u0000<b>', heldBack: null, heldBy: [] }],
      queued: [],
    };
    await store.commitCycle(okCycle(T, [snap('SN-1', { name: 'Lobby\u0000<b>' })]), T, () => ({ alerts: write, result: undefined }));
    expect((await store.box('SN-1'))?.name).toBe('Lobby\uFFFD<b>');
    const [t] = await store.alerts.transitionsSince(0);
    expect(t).toMatchObject({ key: 'box-offline\u0000SN-1', serial: 'SN-1', summary: 'Lobby\uFFFD<b>' });
    await store.close();
  });
});
