/** The history store contract (history.contract.ts) against SQLite files. */
import { join } from 'node:path';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { MAX_GAP, tempDir } from '../store/model.js';
import { historyStoreContract } from './history.contract.js';

historyStoreContract('SQLite', () => {
  const tmp = tempDir();
  const path = join(tmp.dir, 'data', 'boxwatch.db');
  const open = (): SqliteStore => openStore(path, { clock: new FakeClock('2026-03-01T10:00:00Z'), maxGapMs: MAX_GAP });
  let store = open();
  return {
    store,
    reopen: () => {
      store.close();
      store = open();
      return store;
    },
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});
