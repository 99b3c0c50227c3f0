/**
 * The history store contract (history.contract.ts) against the PostgreSQL store, on a real
 * throwaway PostgreSQL server (one cluster for this file, one database emptied for each test).
 */
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { MAX_GAP } from '../store/model.js';
import { historyStoreContract } from './history.contract.js';

describeWithPostgres('PostgreSQL history', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  historyStoreContract('PostgreSQL', async () => {
    const url = await server.cleanDatabase('history');
    const open = (): Promise<PostgresStore> => PostgresStore.open(url, { clock: new FakeClock('2026-03-01T10:00:00Z'), maxGapMs: MAX_GAP });
    let store = await open();
    return {
      store,
      reopen: async () => {
        await store.close();
        store = await open();
        return store;
      },
      close: () => store.close(),
    };
  });
});
