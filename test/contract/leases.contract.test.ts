/** The lease and fencing contracts (leases.contract.ts) against in memory and SQLite (two connections to one file: replicas on one machine). */
import { join } from 'node:path';
import { looksLikeNotificationMessage } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import { openStore } from '../../src/store/index.js';
import { MemoryLeases } from '../cluster/memory-leases.js';
import { tempDir } from '../store/model.js';
import { fencingContract, leasesContract } from './leases.contract.js';

leasesContract('in memory', () => {
  const leases = new MemoryLeases();
  return { handles: [leases, leases], close: () => undefined };
});

leasesContract('SQLite, two connections to one file', () => {
  const tmp = tempDir();
  const path = join(tmp.dir, 'boxwatch.db');
  const stores = [openStore(path), openStore(path)] as const;
  return {
    handles: [stores[0].leases, stores[1].leases],
    close: () => {
      for (const s of stores) s.close();
      tmp.cleanup();
    },
  };
});

fencingContract('SQLite', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  return {
    leases: store.leases,
    committer: store,
    queue: store.groupQueue<AlertItem, NotificationMessage>(),
    outbox: store.outbox<NotificationMessage>(looksLikeNotificationMessage),
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});
