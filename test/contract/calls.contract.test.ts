/** The calls repository contract (calls.contract.ts) against the SQLite store. */
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { tempDir } from '../store/model.js';
import { callsRepoContract } from './calls.contract.js';

callsRepoContract('SQLite', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  return {
    repo: store.calls,
    close: () => {
      store.close();
      tmp.cleanup();
    },
  };
});
