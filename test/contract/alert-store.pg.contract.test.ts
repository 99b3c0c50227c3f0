/**
 * The alert repositories contract (alert-store.contract.ts) against the PostgreSQL store, on a
 * real throwaway PostgreSQL server (one cluster for this file, a database per suite, emptied for
 * each test).
 */
import { afterAll, beforeAll } from 'vitest';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer, rawQuery } from '../helpers/postgres.js';
import { alertStoreContract } from './alert-store.contract.js';

describeWithPostgres('PostgreSQL alert repositories', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  alertStoreContract(
    'PostgreSQL',
    async () => {
      const url = await server.cleanDatabase('alerts');
      const store = await PostgresStore.open(url);
      const queue = store.groupQueue<AlertItem, NotificationMessage>();
      return {
        committer: store,
        queries: store.alerts,
        queue,
        outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
        enqueue: (items) => queue.enqueueItems(items),
        plantDamagedItem: (notifier, now) => rawQuery(url, "INSERT INTO notification_queue (notifier, created_at, item) VALUES ($1, $2, '{broken')", [notifier, now]),
        close: () => store.close(),
      };
    },
  );
});
