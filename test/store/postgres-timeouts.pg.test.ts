/**
 * A connection to PostgreSQL that silently dies must not hang anyone for ever (src/store/postgres/
 * database.ts): on a real server, through the test TCP proxy (test/helpers/tcp-proxy.ts), whose
 * `blackhole` drops every packet the way a network cut does (the server sees no close).
 * - A replica is cut in the middle of a transaction holding its lease row (a fenced write's
 *   check): the server ends that session once it is idle in the transaction for
 *   `idleInTransactionTimeoutMs`, so another replica's takeover of the lease goes through instead
 *   of waiting on the row lock for ever (what made a partition block both replicas).
 * - The cut replica's own call does not hang: it fails with `store_unavailable` once the client
 *   gives it up (`statementTimeoutMs` plus a margin), and its pool serves again after the heal.
 * Short timeouts here; the defaults are a minute, replicas use half their lease.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Fence } from '../../src/domain/leases.js';
import { PostgresDatabase } from '../../src/store/postgres/database.js';
import { checkFence } from '../../src/store/postgres/leases.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

describeWithPostgres('a PostgreSQL connection that silently dies', () => {
  let server: PostgresServer;
  let proxy: TcpProxy;
  let url: string;

  beforeAll(async () => {
    server = await PostgresServer.start();
    url = await server.createDatabase('timeouts');
    proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
  });
  afterAll(async () => {
    await proxy?.close();
    server?.stop();
  });

  it('a replica cut mid-transaction loses its locks to the server’s idle timeout; its own call fails instead of hanging', async () => {
    const direct = await PostgresStore.open(url);
    const cutDb = await PostgresDatabase.open(url.replace(`:${server.port}/`, `:${proxy.port}/`), { statementTimeoutMs: 1_000, idleInTransactionTimeoutMs: 1_000, connectTimeoutMs: 2_000 });
    try {
      const now = Date.now();
      const lease = await direct.leases.acquire('acme', 'replica-a', now - 10_000, 5_000); // expired already
      expect(lease?.holder).toBe('replica-a');
      const fence: Fence = { account: 'acme', holder: 'replica-a', token: lease!.token };

      // replica-a's fenced write: the fence check holds the lease row; then the network goes.
      let resume!: () => void;
      const paused = new Promise<void>((r) => (resume = r));
      let checked!: () => void;
      const holding = new Promise<void>((r) => (checked = r));
      const write = cutDb.transaction(async (tx) => {
        await checkFence(tx, fence);
        checked();
        await paused;
        await tx.query('SELECT 1');
      });
      await holding;
      proxy.cut('blackhole');
      resume();

      // replica-b takes the expired lease over: it waits for the row only until the server ends the dead session.
      const taken = await direct.leases.acquire('acme', 'replica-b', Date.now(), 5_000);
      expect(taken).toMatchObject({ account: 'acme', holder: 'replica-b', token: fence.token + 1 });

      // replica-a's call did not hang: the client gave it up, as a database out of reach.
      await expect(write).rejects.toMatchObject({ code: 'store_unavailable' });
      expect(await cutDb.query('SELECT 1 AS one').catch((err: unknown) => err)).toMatchObject({ code: 'store_unavailable' });

      // After the heal the same pool works again, on new connections.
      proxy.heal();
      expect(await cutDb.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await cutDb.close().catch(() => undefined);
      await direct.close();
    }
  }, 60_000);
});
