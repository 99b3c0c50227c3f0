/**
 * The fleet snapshot of one replica follows what the other replicas store, on one SQLite file
 * (two connections) and on PostgreSQL (two stores), as the replicas' API, /metrics and dashboard
 * read it:
 * - the other replica's cycle started *before* this replica's last published cycle and committed
 *   after it (two replicas on one schedule, or a clock a little behind): its values are shown at
 *   the next request all the same, and the snapshot's version changes with it;
 * - an account removed from `gateways:` and retired by another replica (its boxes forgotten in
 *   the first configured account's cycle) leaves this replica's snapshot with that cycle.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetSnapshot } from '../../src/http/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { openStore } from '../../src/store/index.js';
import type { CycleWrite, Store } from '../../src/domain/store.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { okCycle, snap } from '../store/model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

/** A successful cycle of `account` at `t` listing `serials`, each with `battery`. */
function cycleOf(account: string, t: number, serials: string[], battery: number): CycleWrite {
  const w = okCycle(t, serials.map((s) => snap(s, { battery, lastSeen: t })));
  return { ...w, cycle: { ...w.cycle, account } };
}

/** Two replicas' stores on one database, and how to close them. */
type Pair = { a: Store; b: Store; close(): Promise<void> };

function snapshotCases(open: (name: string) => Promise<Pair>): void {
  it("shows the other replica's cycle that started before this replica's last one and committed after it", async () => {
    const { a, b, close } = await open('order');
    try {
      await a.recordCycle(cycleOf('acme', T0, ['acme/BX-1'], 80)); // replica A leads acme
      await b.recordCycle(cycleOf('globex', T0 + 100, ['globex/BX-1'], 80)); // replica B leads globex
      const snapA = fleetSnapshot(a);
      const battery = async (): Promise<Record<string, number | null>> => Object.fromEntries((await snapA.boxes()).map((x) => [x.serial, x.battery]));
      expect(await battery()).toEqual({ 'acme/BX-1': 80, 'globex/BX-1': 80 });
      const seen: Record<string, number | null>[] = [];
      const versions: number[] = [await snapA.version()];
      for (let round = 1; round <= 3; round++) {
        const t = T0 + round * 5_000;
        // One schedule: B's cycle starts 20 ms before A's, and A's commits (and is published) first.
        await a.recordCycle(cycleOf('acme', t + 20, ['acme/BX-1'], 80 - round));
        snapA.publish(t + 20, ['acme'], await a.boxes('acme'));
        await b.recordCycle(cycleOf('globex', t, ['globex/BX-1'], 50 - round));
        seen.push(await battery());
        versions.push(await snapA.version());
      }
      expect(seen).toEqual([
        { 'acme/BX-1': 79, 'globex/BX-1': 49 },
        { 'acme/BX-1': 78, 'globex/BX-1': 48 },
        { 'acme/BX-1': 77, 'globex/BX-1': 47 },
      ]);
      expect(new Set(versions).size).toBe(versions.length); // each round is a new version (the dashboard's overview and live events follow it)
      expect(await snapA.version()).toBe(versions.at(-1)); // and nothing new, no new version
    } finally {
      await close();
    }
  }, 60_000);

  it('drops the boxes of an account another replica retired (removed from gateways:)', async () => {
    const { a, b, close } = await open('retired');
    try {
      await a.recordCycle(cycleOf('acme', T0, ['acme/BX-1'], 80));
      await a.recordCycle(cycleOf('initech', T0 + 100, ['initech/BX-1'], 80));
      const standby = fleetSnapshot(b, undefined, ['acme']); // initech is no longer configured
      expect((await standby.boxes()).map((x) => x.serial)).toEqual(['acme/BX-1', 'initech/BX-1']);
      // acme's leader retires initech in acme's cycle: its boxes are forgotten, and initech writes no cycle.
      await a.recordCycle(cycleOf('acme', T0 + 5_000, ['acme/BX-1'], 79));
      await a.forgetBoxes(['initech/BX-1'], T0 + 5_000);
      await a.recordCycle(cycleOf('acme', T0 + 10_000, ['acme/BX-1'], 78));
      expect((await standby.boxes()).map((x) => [x.serial, x.battery])).toEqual([['acme/BX-1', 78]]);
    } finally {
      await close();
    }
  }, 60_000);
}

describe('one SQLite file, two replicas', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'boxwatch-snapshot-replicas-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  snapshotCases(async (name) => {
    const path = join(dir, `${name}.db`);
    const a = openStore(path);
    const b = openStore(path);
    return {
      a,
      b,
      async close() {
        a.close();
        b.close();
      },
    };
  });
});

describeWithPostgres('one PostgreSQL database, two replicas', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  }, 60_000);
  afterAll(() => server?.stop());
  snapshotCases(async (name) => {
    const url = await server.cleanDatabase(name);
    const a = await PostgresStore.open(url);
    const b = await PostgresStore.open(url);
    return {
      a,
      b,
      async close() {
        await a.close();
        await b.close();
      },
    };
  });
});
