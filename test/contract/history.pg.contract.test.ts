/**
 * The history store contract (history.contract.ts) against the PostgreSQL store, on a real
 * throwaway PostgreSQL server (one cluster for this file, one database emptied for each test).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { HOUR, MAX_GAP, okCycle, snap } from '../store/model.js';
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

  const T0 = Date.parse('2026-03-01T10:00:00Z');
  const of = (account: string, t: number, n: number, battery: number, firmware: string): ReturnType<typeof okCycle> => {
    const write = okCycle(t, Array.from({ length: n }, (_, i) => snap(`${account}/BX-${String(i + 1).padStart(3, '0')}`, { battery, firmware })));
    return { ...write, cycle: { ...write.cycle, account } };
  };

  it('two accounts committing at the same time on one store: both cycles are stored, each box with its own id and history', async () => {
    const url = await server.cleanDatabase('concurrent');
    const store = await PostgresStore.open(url, { clock: new FakeClock('2026-03-01T10:00:00Z'), maxGapMs: MAX_GAP });
    try {
      for (let i = 0; i < 3; i++) {
        const t = T0 + i * 30_000;
        await Promise.all([store.recordCycle(of('acme', t, 20, 50 + i, `fw-a${i}`)), store.recordCycle(of('globex', t, 20, 70 + i, `fw-g${i}`))]);
      }
      const boxes = await store.boxes();
      expect(boxes.filter((b) => b.account === 'acme')).toHaveLength(20);
      expect(boxes.filter((b) => b.account === 'globex')).toHaveLength(20);
      expect((await store.lastCycles()).map((c) => c.account)).toEqual(['acme', 'globex']);
      for (const [serial, first] of [['acme/BX-007', 50], ['globex/BX-020', 70]] as const) {
        const h = await store.history(serial, 'battery', T0, T0 + 90_000);
        expect(h.points.map((p) => (p as { value: unknown }).value)).toEqual([first, first + 1, first + 2]);
      }
      expect((await store.valueAt('globex/BX-001', 'firmware', T0 + 75_000))?.value).toBe('fw-g2');
      expect((await store.valueAt('acme/BX-001', 'firmware', T0 + 45_000))?.value).toBe('fw-a1');
    } finally {
      await store.close();
    }
  });

  it('two stores (two replicas) on one database, each writing its own account at the same times: each reads the other\'s boxes and history', async () => {
    const url = await server.cleanDatabase('replicas');
    const open = (): Promise<PostgresStore> => PostgresStore.open(url, { clock: new FakeClock('2026-03-01T10:00:00Z'), maxGapMs: MAX_GAP });
    const [a, b] = [await open(), await open()];
    try {
      // 10:50 to 11:10, the same firmware strings on both sides; the hour closes for both.
      for (let i = 0; i < 40; i++) {
        const t = T0 + 50 * 60_000 + i * 30_000;
        await Promise.all([a.recordCycle(of('acme', t, 10, 50 + (i % 3), `fw-${i % 2}`)), b.recordCycle(of('globex', t, 10, 60 + (i % 3), `fw-${i % 2}`))]);
      }
      for (const store of [a, b]) {
        const boxes = await store.boxes();
        expect(boxes).toHaveLength(20);
        expect(new Set(boxes.map((x) => x.serial)).size).toBe(20);
        for (const [serial, base] of [['acme/BX-003', 50], ['globex/BX-010', 60]] as const) {
          const raw = await store.history(serial, 'battery', T0 + 50 * 60_000, T0 + 70 * 60_000, { kind: 'raw', maxPoints: 1000 });
          expect(raw.points.map((p) => (p as { value: unknown }).value)).toEqual(Array.from({ length: 40 }, (_, i) => base + (i % 3)));
          const rollup = await store.history(serial, 'battery', T0, T0 + HOUR, { kind: 'rollup' });
          expect(rollup.kind === 'rollup' && rollup.points.map((p) => p.count)).toEqual([20]);
          expect((await store.valueAt(serial, 'firmware', T0 + 50 * 60_000 + 30_000))?.value).toBe('fw-1');
        }
        // Exactly: each account's cycles are recorded at their own starts, whichever store loaded its writer when.
        for (const r of await store.uptime(T0 + 50 * 60_000, T0 + HOUR)) expect(r.observedMs).toBe(10 * 60_000);
        expect(await store.uptime(T0 + 50 * 60_000, T0 + HOUR)).toHaveLength(20);
      }
      // A replica restarting takes its account over where the other left it (leadership moved).
      await a.close();
      await b.recordCycle(of('acme', T0 + 70 * 60_000, 10, 99, 'fw-0'));
      const acme = await b.history('acme/BX-001', 'battery', T0 + 69 * 60_000, T0 + 71 * 60_000, { kind: 'raw' });
      expect(acme.points.map((p) => (p as { value: unknown }).value)).toEqual([50 + (38 % 3), 50 + (39 % 3), 99]);
    } finally {
      await b.close();
    }
  });

  it('an account whose leadership moves to the other store and back: each store carries on where the other left it, its own other account untouched', async () => {
    const url = await server.cleanDatabase('handover');
    const open = (): Promise<PostgresStore> => PostgresStore.open(url, { clock: new FakeClock('2026-03-01T10:00:00Z'), maxGapMs: MAX_GAP });
    const [a, b] = [await open(), await open()];
    const at = (i: number): number => T0 + 50 * 60_000 + i * 30_000;
    try {
      // 10:50 to 11:20. acme: led by a, by b from 11:00 to 11:05 (across the hour, where b sees a
      // new box and a new firmware), by a again; globex: led by b throughout.
      for (let i = 0; i < 60; i++) {
        const acmeOnB = i >= 20 && i < 30;
        const acme = of('acme', at(i), i < 20 ? 10 : 11, 50 + (i % 3), acmeOnB ? 'fw-b' : `fw-${i % 2}`);
        await Promise.all([(acmeOnB ? b : a).recordCycle(acme), b.recordCycle(of('globex', at(i), 10, 60 + (i % 3), `fw-${i % 2}`))]);
      }
      for (const store of [a, b]) {
        const boxes = await store.boxes();
        expect(boxes.map((x) => x.serial).filter((s) => s.startsWith('acme/'))).toHaveLength(11);
        expect(boxes.filter((x) => x.account === 'globex')).toHaveLength(10);
        for (const [serial, base] of [['acme/BX-003', 50], ['globex/BX-010', 60]] as const) {
          const raw = await store.history(serial, 'battery', at(0), at(60), { kind: 'raw', maxPoints: 1000 });
          expect(raw.points.map((p) => (p as { value: unknown }).value)).toEqual(Array.from({ length: 60 }, (_, i) => base + (i % 3)));
          const rollup = await store.history(serial, 'battery', T0, T0 + HOUR, { kind: 'rollup' });
          expect(rollup.kind === 'rollup' && rollup.points.map((p) => p.count)).toEqual([20]);
        }
        expect((await store.valueAt('acme/BX-001', 'firmware', at(25)))?.value).toBe('fw-b');
        expect((await store.valueAt('acme/BX-001', 'firmware', at(31)))?.value).toBe('fw-1');
        // Observed without a break across both handovers (a gap would show as less observed time:
        // at least a poll interval), exactly: the first cycles of both accounts race (a and b load
        // their writers at once), and each account's cycles are recorded at their own starts.
        const observed = new Map((await store.uptime(at(0), at(59))).map((r) => [r.serial, r.observedMs]));
        for (const serial of ['acme/BX-003', 'globex/BX-001']) expect(observed.get(serial)).toBe(59 * 30_000);
        expect(observed.get('acme/BX-011')).toBe(39 * 30_000);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});
