/**
 * The recordings repository contract (recordings.contract.ts) against the PostgreSQL store, on a
 * real throwaway PostgreSQL server (one cluster for this file, one database emptied for each test);
 * and the plan of the archive pass's probe.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { OTHER_ARCHIVES } from '../../src/store/postgres/recordings.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { recordingsRepoContract } from './recordings.contract.js';

describeWithPostgres('PostgreSQL recordings', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  recordingsRepoContract('PostgreSQL', async () => {
    const store = await PostgresStore.open(await server.cleanDatabase('recordings'));
    return { recordings: store.recordings, calls: store.calls, close: () => store.close() };
  });

  it('otherArchives, the probe of every archive pass, can be answered from the index recordings_archive alone (no scan of the recordings)', async () => {
    const url = await server.cleanDatabase('recordings');
    const store = await PostgresStore.open(url); // migrated
    await store.close();
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('SET enable_seqscan = off'); // a plan with no other way than a scan still scans
      const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${OTHER_ARCHIVES}`, ['host-a-00000001'])).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/Seq Scan/);
      expect(plan).toMatch(/Index Only Scan using recordings_archive on recordings\b/); // the first id
      expect(plan).toMatch(/Index Only Scan Backward using recordings_archive on recordings r\b/); // each id's newest
    } finally {
      await client.end();
    }
  });
});
