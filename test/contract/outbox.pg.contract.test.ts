/**
 * The outbox contract (outbox.contract.ts) against the PostgreSQL outbox, on a real throwaway
 * PostgreSQL server (one cluster for this file, a database per suite, emptied for each test): the same rules as in memory
 * and SQLite, and two processes' worth of connection pools delivering one outbox send each
 * message once.
 */
import { afterAll, beforeAll } from 'vitest';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { NotificationMessage } from '../../src/domain/notifications.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer, rawQuery } from '../helpers/postgres.js';
import { outboxContract, sharedDeliveryContract } from './outbox.contract.js';

describeWithPostgres('PostgreSQL outbox', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  async function freshStore(db: string): Promise<{ url: string; store: PostgresStore }> {
    const url = await server.cleanDatabase(db);
    return { url, store: await PostgresStore.open(url) };
  }

  outboxContract('PostgreSQL', async () => {
    const { url, store } = await freshStore('outbox');
    return {
      outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
      plantDamaged: async (notifier, now) => {
        await rawQuery(url, "INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES ($1, $2, '{broken', $2)", [notifier, now]);
      },
      close: () => store.close(),
    };
  });

  sharedDeliveryContract('PostgreSQL, two stores (two processes) on one database', async () => {
    const { url, store } = await freshStore('shared');
    const other = await PostgresStore.open(url);
    return {
      handles: [store.outbox<NotificationMessage>(looksLikeNotificationMessage), other.outbox<NotificationMessage>(looksLikeNotificationMessage)],
      close: async () => {
        await store.close();
        await other.close();
      },
    };
  });
});
