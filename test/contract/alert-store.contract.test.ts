/** The alert repositories contract (alert-store.contract.ts) against the SQLite store. */
import { join } from 'node:path';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { openStore } from '../../src/store/index.js';
import { connectionOf } from '../helpers/sqlite.js';
import { tempDir } from '../store/model.js';
import { alertStoreContract } from './alert-store.contract.js';

alertStoreContract('SQLite', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  const queue = store.groupQueue<AlertItem, NotificationMessage>();
  return {
    committer: store,
    queries: store.alerts,
    queue,
    outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
    enqueue: (items) => queue.enqueueItems(items),
    plantDamagedItem: (notifier, now) => {
      connectionOf(store).prepare("INSERT INTO notification_queue (notifier, created_at, item) VALUES (?, ?, '{broken')").run(notifier, now);
    },
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});
