/**
 * The test-calls repository contract (test-calls.contract.ts) against the PostgreSQL store, on a
 * real throwaway PostgreSQL server (one cluster for this file, one database emptied for each
 * test). Two handles are two stores, each with its own connection pool: two processes.
 */
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { testCallsRepoContract } from './test-calls.contract.js';

describeWithPostgres('PostgreSQL test calls', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  testCallsRepoContract('PostgreSQL', async () => {
    const url = await server.cleanDatabase('test_calls');
    return {
      open: async () => {
        const store = await PostgresStore.open(url);
        return { testCalls: store.testCalls, calls: store.calls, close: () => store.close() };
      },
      cleanup: () => undefined,
    };
  });
});
