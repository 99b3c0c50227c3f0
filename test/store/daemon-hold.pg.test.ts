/**
 * One daemon per database on PostgreSQL (the `daemon_hold` row, src/store/postgres/daemon-hold.ts),
 * with the rules of SQLite's hold (test/store/daemon-lock.test.ts): a second daemon is refused
 * while the first's heartbeat is fresh, naming the holder and the database (never the password);
 * a holder whose heartbeat is older than DAEMON_STALE_AFTER_MS is taken over and learns it at its
 * next heartbeat; stopping gives it up; taking
 * it voids the claims an earlier daemon left on the outbox. Real throwaway PostgreSQL server; the
 * same with real `boxwatch run` processes is in test/e2e/postgres-daemon.e2e.test.ts.
 */
import { hostname } from 'node:os';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import { DAEMON_STALE_AFTER_MS, StoreError } from '../../src/store/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer, rawQuery } from '../helpers/postgres.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const PASSWORD = 'hold-Pa55-word';

describeWithPostgres('the daemon hold on PostgreSQL', () => {
  let server: PostgresServer;
  let url: string;
  const open: PostgresStore[] = [];
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());
  beforeEach(async () => {
    url = await server.cleanDatabase('hold');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  /** A store on a clean database, as one daemon's process opens it (the password is ignored by the test server). */
  async function daemon(clock = new FakeClock(T0)): Promise<PostgresStore> {
    const store = await PostgresStore.open(url.replace('postgres@', `postgres:${PASSWORD}@`), { clock });
    open.push(store);
    return store;
  }

  async function refusal(p: Promise<unknown>): Promise<StoreError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('store_in_use');
    return err as StoreError;
  }

  it('a second daemon is refused while the first beats, naming the holder and the database without the password; stopping gives it up', async () => {
    const first = await daemon();
    expect(await first.hold.take()).toEqual({ holder: { pid: process.pid, host: hostname(), since: T0, beat: expect.any(Number) }, tookOver: null });
    // Our own pid counts as gone (an earlier life of this process): the holder is made another live process, on another host.
    await rawQuery(url, "UPDATE daemon_hold SET pid = 4242, host = 'other.example'");
    const second = await daemon(new FakeClock(T0 + 60_000));
    const err = await refusal(second.hold.take());
    expect(err.message).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/hold is in use by another boxwatch daemon \(pid 4242 on other\.example, since 2026-03-01T10:00:00\.000Z, last heartbeat [0-9]s ago\); stop it first, or give this one another storage\.url$/);
    expect(err.message).not.toContain(PASSWORD);

    await rawQuery(url, 'UPDATE daemon_hold SET pid = $1, host = $2', [process.pid, hostname()]);
    await first.hold.release();
    expect((await second.hold.take()).tookOver).toBeNull();
  });

  it('a holder whose heartbeat stopped over 60 s ago is taken over, with its claims on the outbox voided; it learns so at its next heartbeat', async () => {
    const first = await daemon();
    await first.hold.take();
    const outbox = first.outbox(looksLikeNotificationMessage);
    await outbox.enqueue('mail', { kind: 'alert', items: [], createdAt: T0 } as never, T0);
    expect(await outbox.claim('mail', T0, 10, 86_400_000)).toHaveLength(1); // being sent by the first daemon
    await first.hold.beat(); // a live heartbeat changes nothing
    await rawQuery(url, "UPDATE daemon_hold SET host = 'other.example', beat = beat - $1", [DAEMON_STALE_AFTER_MS + 1_000]);

    const second = await daemon(new FakeClock(T0 + 3_600_000));
    const taken = await second.hold.take();
    expect(taken.tookOver).toMatchObject({ pid: process.pid, host: 'other.example', since: T0 });
    expect(await second.outbox(looksLikeNotificationMessage).claim('mail', T0, 10, 60_000)).toHaveLength(1); // due again at once

    const lost = await refusal(first.hold.beat());
    expect(lost.message).toContain(`was taken over by another boxwatch daemon (now held by pid ${process.pid} on ${hostname()}, since 2026-03-01T11:00:00.000Z)`);
    await first.hold.release(); // no longer ours: the new holder keeps it
    await second.hold.beat();
  });
});
