/**
 * The calls repository contract (calls.contract.ts) against the PostgreSQL store, on a real
 * throwaway PostgreSQL server (one cluster for this file, one database emptied for each test).
 */
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { callsRepoContract } from './calls.contract.js';

describeWithPostgres('PostgreSQL calls', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  callsRepoContract('PostgreSQL', async () => {
    const store = await PostgresStore.open(await server.cleanDatabase('calls'));
    return { repo: store.calls, close: () => store.close() };
  });
});
