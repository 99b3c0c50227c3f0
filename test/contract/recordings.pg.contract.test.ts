/**
 * The recordings repository contract (recordings.contract.ts) against the PostgreSQL store, on a
 * real throwaway PostgreSQL server (one cluster for this file, one database emptied for each test).
 */
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
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
});
