/** The recordings repository contract (recordings.contract.ts) against the SQLite store, on a real file. */
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { tempDir } from '../store/model.js';
import { recordingsRepoContract } from './recordings.contract.js';

recordingsRepoContract('SQLite', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  return {
    recordings: store.recordings,
    calls: store.calls,
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});
