/** The recordings repository contract (recordings.contract.ts) against the SQLite store, on a real file; and the plan of the archive pass's probe. */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { OTHER_ARCHIVES } from '../../src/store/sqlite/recordings.js';
import { connectionOf } from '../helpers/sqlite.js';
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

it('otherArchives, the probe of every archive pass, is index lookups only (recordings_archive), never a scan of the recordings', () => {
  const tmp = tempDir();
  const store = openStore(join(tmp.dir, 'boxwatch.db'));
  try {
    const plan = (connectionOf(store).prepare(`EXPLAIN QUERY PLAN ${OTHER_ARCHIVES}`).all({ archive: 'host-a-00000001' }) as { detail: string }[]).map((r) => r.detail);
    const reads = plan.filter((d) => /\brecordings\b|\br\b/.test(d) && /^(SCAN|SEARCH)/.test(d));
    expect(reads.length).toBe(3);
    for (const d of reads) expect(d).toMatch(/^SEARCH (recordings|r) USING COVERING INDEX recordings_archive \(archive[=>]/);
  } finally {
    store.close();
    tmp.cleanup();
  }
});
