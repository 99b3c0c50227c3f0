/** The outbox contract (outbox.contract.ts) against every implementation: in memory and SQLite. */
import { join } from 'node:path';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { NotificationMessage } from '../../src/domain/notifications.js';
import { openStore } from '../../src/store/index.js';
import { connectionOf } from '../helpers/sqlite.js';
import { MemoryOutbox } from '../notify/memory-outbox.js';
import { tempDir } from '../store/model.js';
import { outboxContract, sharedDeliveryContract } from './outbox.contract.js';

outboxContract('in memory', () => {
  const outbox = new MemoryOutbox();
  return {
    outbox,
    plantDamaged: (notifier, now) => {
      outbox.enqueue(notifier, { kind: 'alert', items: [], createdAt: now }, now);
      outbox.rows[outbox.rows.length - 1]!.json = '{broken';
    },
    close: () => undefined,
  };
});

outboxContract('SQLite', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  return {
    outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
    plantDamaged: (notifier, now) => {
      connectionOf(store).prepare("INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES (?, ?, '{broken', ?)").run(notifier, now, now);
    },
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});

sharedDeliveryContract('in memory', () => {
  const outbox = new MemoryOutbox();
  return { handles: [outbox, outbox], close: () => undefined };
});

sharedDeliveryContract('SQLite, two connections to one file', () => {
  const tmp = tempDir();
  const path = join(tmp.dir, 'boxwatch.db');
  const stores = [openStore(path), openStore(path)];
  return {
    handles: [stores[0]!.outbox<NotificationMessage>(looksLikeNotificationMessage), stores[1]!.outbox<NotificationMessage>(looksLikeNotificationMessage)],
    close: () => {
      for (const s of stores) s.close();
      tmp.cleanup();
    },
  };
});
