/** The test-calls repository contract (test-calls.contract.ts) against the SQLite store, on a real file. */
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { tempDir } from '../store/model.js';
import { testCallsRepoContract } from './test-calls.contract.js';

testCallsRepoContract('SQLite', () => {
  const tmp = tempDir();
  const file = join(tmp.dir, 'boxwatch.db');
  return {
    open: () => {
      const store = openStore(file);
      return Promise.resolve({ testCalls: store.testCalls, calls: store.calls, close: () => store.close() });
    },
    cleanup: () => tmp.cleanup(),
  };
});
