/**
 * The contract of the history store (`Store`, src/domain/store.ts) as a suite any implementation
 * runs: round trips of a cycle, failed cycles, missing and returning boxes, gaps, the clock
 * stepping back, rollback of a failing cycle, persistence across reopening, history selection,
 * uptime, retention and forgotten boxes. Run by history.contract.test.ts against SQLite; a
 * PostgreSQL store adds one line there. (How SQLite lays rows out is test/store/store.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pruneGradually, StoreError } from '../../src/store/index.js';
import type { CycleCommitter } from '../../src/alerts/repositories.js';
import type { Store } from '../../src/domain/store.js';
import { HOUR, MAX_GAP, MINUTE, Model, failedCycle, okCycle, snap } from '../store/model.js';

export interface HistoryFixture {
  /** The store under test (empty at first, maxGapMs = MAX_GAP). */
  store: HistoryStore;
  /** Closes the store and opens the same data again (a restart); returns the new store. */
  reopen(): HistoryStore | Promise<HistoryStore>;
  close(): void | Promise<void>;
}

/** A Store whose methods may answer later (PostgreSQL) or at once (SQLite); every call is awaited. With the cycle unit of work (retiring accounts). */
export type HistoryStore = Store & CycleCommitter<unknown>;

/** A call's outcome as a Promise, whether it throws at once or rejects later. */
const later = async (fn: () => unknown): Promise<unknown> => fn();

const T0 = Date.parse('2026-03-01T10:00:00Z');
const DAY = 24 * HOUR;

export function historyStoreContract(name: string, make: () => HistoryFixture | Promise<HistoryFixture>): void {
  describe(`Store contract: ${name}`, () => {
  let f: HistoryFixture;
  let store: HistoryStore;
  beforeEach(async () => {
    f = await make();
    store = f.store;
  });
  afterEach(async () => {
    await f.close();
  });

  /** Polls every `step` (30 s) from `from` for `n` cycles, the boxes given by `seen(t, i)`; returns the last cycle's time. */
  async function poll(from: number, n: number, seen: (t: number, i: number) => ReturnType<typeof snap>[], step = 30_000): Promise<number> {
    let t = from;
    for (let i = 0; i < n; i++, t += step) await store.recordCycle(okCycle(t, seen(t, i)));
    return t - step;
  }

  describe('recordCycle', () => {
    it('stores the current state of each box, the cycle record and the first sighting', async () => {
      const a = snap('BX-001', { battery: 91, signal: -71, lastSeen: T0 - 5000, detailsAt: T0, location: 'Lobby <B> & "East"' });
      await store.recordCycle(okCycle(T0, [a, snap('BX-002', { connected: false, battery: null })]));
      await store.recordCycle(okCycle(T0 + 30_000, [{ ...a, battery: 90, lastSeen: T0 + 25_000 }, snap('BX-002', { connected: false, battery: null })]));

      expect((await store.boxes()).map((b) => b.serial)).toEqual(['BX-001', 'BX-002']);
      expect(await store.box('BX-001')).toEqual({
        ...a,
        battery: 90,
        lastSeen: T0 + 25_000,
        firstSeen: T0,
        lastPolled: T0 + 30_000,
        missingSince: null,
        account: 'default',
      });
      expect((await store.box('BX-002'))?.connected).toBe(false);
      expect(await store.box('BX-404')).toBeUndefined();
      expect(await store.lastCycle()).toEqual({ ...okCycle(T0 + 30_000, [a, a]).cycle, account: 'default' });
      expect((await store.valueAt('BX-001', 'battery', T0 + 29_999))?.value).toBe(91);
      expect((await store.valueAt('BX-001', 'battery', T0 + 30_000))?.value).toBe(90);
      expect((await store.valueAt('BX-002', 'battery', T0))?.value).toBeNull();
      expect((await store.valueAt('BX-002', 'connected', T0))?.value).toBe(0);
      expect((await store.valueAt('BX-001', 'firmware', T0))?.value).toBe('3.4.2');
    });

    it('a failed cycle is recorded and leaves every box state as it was; the time after it is a gap', async () => {
      const last = await poll(T0, 4, () => [snap('BX-001', { battery: 50 })]);
      const before = await store.boxes();
      await store.recordCycle(failedCycle(last + 30_000, 'unauthorized'));
      expect(await store.boxes()).toEqual(before);
      expect(await store.lastCycle()).toMatchObject({ outcome: 'failed', errorCode: 'unauthorized', boxes: 0 });
      expect((await store.valueAt('BX-001', 'battery', last + 29_999))?.value).toBe(50);
      expect(await store.valueAt('BX-001', 'battery', last + 30_000)).toBeUndefined();
      expect(await store.valueAt('BX-001', 'battery', last + 59_000)).toBeUndefined();
      await store.recordCycle(okCycle(last + 60_000, [snap('BX-001', { battery: 49 })]));
      expect((await store.valueAt('BX-001', 'battery', last + 60_000))?.value).toBe(49);
    });

    it('a box absent from the list is marked missing (not disconnected), and back when it returns', async () => {
      const t1 = await poll(T0, 3, () => [snap('BX-001'), snap('BX-002')]);
      await store.recordCycle(okCycle(t1 + 30_000, [snap('BX-001')], ['BX-002']));
      await store.recordCycle(okCycle(t1 + 60_000, [snap('BX-001')], ['BX-002']));
      expect(await store.box('BX-002')).toMatchObject({ missingSince: t1 + 30_000, connected: true, lastPolled: t1 });
      expect(await store.valueAt('BX-002', 'connected', t1 + 45_000)).toBeUndefined();
      await store.recordCycle(okCycle(t1 + 90_000, [snap('BX-001'), snap('BX-002', { battery: 12 })]));
      expect(await store.box('BX-002')).toMatchObject({ missingSince: null, battery: 12, lastPolled: t1 + 90_000 });
      expect((await store.valueAt('BX-002', 'battery', t1 + 90_000))?.value).toBe(12);
    });

    it('polls further apart than the maximum gap leave no data between them', async () => {
      const last = await poll(T0, 3, () => [snap('BX-001', { signal: -80 })]);
      const resume = last + 2 * HOUR;
      await store.recordCycle(okCycle(resume, [snap('BX-001', { signal: -80 })]));
      expect((await store.valueAt('BX-001', 'signal', last + MAX_GAP - 1))?.value).toBe(-80);
      expect(await store.valueAt('BX-001', 'signal', last + MAX_GAP)).toBeUndefined();
      expect(await store.valueAt('BX-001', 'signal', last + HOUR)).toBeUndefined();
      expect((await store.valueAt('BX-001', 'signal', resume))?.value).toBe(-80);
      const h = await store.history('BX-001', 'signal', T0, resume + 1);
      expect(h.kind === 'raw' && h.points).toEqual([
        { t: T0, value: -80, until: last + MAX_GAP },
        { t: resume, value: -80, until: resume + 1 },
      ]);
    });

    it('when the clock steps back, cycles are still recorded, each just after the previous one, also after reopening', async () => {
      expect(await store.recordCycle(okCycle(T0, [snap('BX-001', { battery: 80 })]))).toEqual({ startedAt: T0, clockBehindMs: 0 });
      // NTP stepped the clock back a minute: the next cycles start "before" the one recorded.
      expect(await store.recordCycle(okCycle(T0 - 60_000, [snap('BX-001', { battery: 79 })]))).toEqual({ startedAt: T0 + 1, clockBehindMs: 60_000 });
      expect(await store.recordCycle(okCycle(T0 - 30_000, [snap('BX-001', { battery: 78 })]))).toEqual({ startedAt: T0 + 2, clockBehindMs: 30_001 });
      store = await f.reopen();
      expect(await store.recordCycle(okCycle(T0, [snap('BX-001', { battery: 77 })]))).toEqual({ startedAt: T0 + 3, clockBehindMs: 2 });
      // Once wall time is past the last record, cycles carry their own start again.
      expect(await store.recordCycle(okCycle(T0 + 30_000, [snap('BX-001', { battery: 76 })]))).toEqual({ startedAt: T0 + 30_000, clockBehindMs: 0 });
      expect((await store.lastCycle())?.startedAt).toBe(T0 + 30_000);
      expect((await store.box('BX-001'))?.battery).toBe(76);
      expect((await store.valueAt('BX-001', 'battery', T0 + 3))?.value).toBe(77);
      expect((await store.history('BX-001', 'battery', T0, T0 + 60_000)).points.map((p) => (p as { value: unknown }).value)).toEqual([80, 79, 78, 77, 76]);
    });

    it('cycles of several accounts: each covers its own boxes; a failed one freezes only its account, and no clock step is seen', async () => {
      const of = (account: string, write: ReturnType<typeof okCycle>): ReturnType<typeof okCycle> => ({ ...write, cycle: { ...write.cycle, account } });
      // Two accounts polled at the same times (each cycle starts at the same tick).
      for (let i = 0; i < 3; i++) {
        const t = T0 + i * 30_000;
        expect(await store.recordCycle(of('default', okCycle(t, [snap('BX-001', { battery: 60 })])))).toEqual({ startedAt: t, clockBehindMs: 0 });
        // Same start as the other account's cycle: recorded at its own start (each account's times move forward on their own).
        expect(await store.recordCycle(of('acme', okCycle(t, [snap('acme/BX-001', { battery: 40 })])))).toEqual({ startedAt: t, clockBehindMs: 0 });
      }
      expect((await store.lastCycles()).map((c) => [c.account, c.startedAt])).toEqual([['acme', T0 + 60_000], ['default', T0 + 60_000]]);
      expect((await store.boxes()).map((b) => [b.serial, b.account])).toEqual([['BX-001', 'default'], ['acme/BX-001', 'acme']]);
      expect((await store.boxes('acme')).map((b) => b.serial)).toEqual(['acme/BX-001']); // one account's part of the fleet
      expect((await store.boxes('default')).map((b) => b.serial)).toEqual(['BX-001']);
      expect(await store.boxes('initech')).toEqual([]);
      // acme's gateway fails: its box is not polled from then on; the default account's box is.
      const t3 = T0 + 90_000;
      await store.recordCycle(of('default', okCycle(t3, [snap('BX-001', { battery: 59 })])));
      await store.recordCycle(of('acme', failedCycle(t3)));
      await store.recordCycle(of('default', okCycle(t3 + 30_000, [snap('BX-001', { battery: 58 })])));
      expect(await store.lastCycle()).toMatchObject({ outcome: 'ok', account: 'default' });
      expect((await store.lastCycles()).map((c) => [c.account, c.outcome, c.startedAt])).toEqual([['acme', 'failed', t3], ['default', 'ok', t3 + 30_000]]);
      expect((await store.valueAt('BX-001', 'battery', t3 + 15_000))?.value).toBe(59); // not cut by acme's failure
      expect(await store.valueAt('acme/BX-001', 'battery', t3 + 15_000)).toBeUndefined(); // acme's outage is a gap
      expect((await store.valueAt('acme/BX-001', 'battery', t3 - 1))?.value).toBe(40);
      // A default-account cycle does not call acme's box missing (it is not in its list).
      expect((await store.box('acme/BX-001'))?.missingSince).toBeNull();
      // Hourly rollups count each box's polls among its account's cycles only.
      store = await f.reopen();
      await store.recordCycle(of('default', okCycle(T0 + 2 * HOUR, [snap('BX-001')])));
      await store.recordCycle(of('acme', okCycle(T0 + 2 * HOUR, [snap('acme/BX-001')])));
      const rollup = await store.history('BX-001', 'battery', T0 - HOUR, T0 + HOUR, { kind: 'rollup' });
      const acme = await store.history('acme/BX-001', 'battery', T0 - HOUR, T0 + HOUR, { kind: 'rollup' });
      expect(rollup.kind === 'rollup' && rollup.points.map((p) => p.count)).toEqual([5]);
      expect(acme.kind === 'rollup' && acme.points.map((p) => p.count)).toEqual([3]);
    });

    it("each account's cycle times move forward on their own, across a restart: the clock stepping back moves a cycle after its own account's last, never another's", async () => {
      const of = (account: string, write: ReturnType<typeof okCycle>): ReturnType<typeof okCycle> => ({ ...write, cycle: { ...write.cycle, account } });
      expect(await store.recordCycle(of('default', okCycle(T0, [snap('BX-001', { battery: 60 })])))).toEqual({ startedAt: T0, clockBehindMs: 0 });
      // A restart (the writer loads what is stored), then acme's first cycle of the same instant: exact.
      store = await f.reopen();
      expect(await store.recordCycle(of('acme', okCycle(T0, [snap('acme/BX-001', { battery: 40 })])))).toEqual({ startedAt: T0, clockBehindMs: 0 });
      // acme's clock steps back: its cycle goes just after acme's last, whatever default's.
      expect(await store.recordCycle(of('default', okCycle(T0 + 30_000, [snap('BX-001', { battery: 59 })])))).toEqual({ startedAt: T0 + 30_000, clockBehindMs: 0 });
      expect(await store.recordCycle(of('acme', okCycle(T0 - 5_000, [snap('acme/BX-001', { battery: 39 })])))).toEqual({ startedAt: T0 + 1, clockBehindMs: 5_000 });
      store = await f.reopen();
      expect(await store.recordCycle(of('acme', okCycle(T0 + 1, [snap('acme/BX-001', { battery: 38 })])))).toEqual({ startedAt: T0 + 2, clockBehindMs: 0 });
      expect(await store.recordCycle(of('default', okCycle(T0 + 60_000, [snap('BX-001', { battery: 58 })])))).toEqual({ startedAt: T0 + 60_000, clockBehindMs: 0 });
      expect((await store.lastCycles()).map((c) => [c.account, c.startedAt])).toEqual([['acme', T0 + 2], ['default', T0 + 60_000]]);
      expect((await store.history('acme/BX-001', 'battery', T0, T0 + 3, { kind: 'raw' })).points).toEqual([
        { t: T0, value: 40, until: T0 + 1 },
        { t: T0 + 1, value: 39, until: T0 + 2 },
        { t: T0 + 2, value: 38, until: T0 + 3 },
      ]);
      expect((await store.valueAt('BX-001', 'battery', T0 + 29_999))?.value).toBe(60);
    });

    it('two accounts polled alternately across hour boundaries and restarts: each keeps the coverage it would have alone', async () => {
      const of = (account: string, write: ReturnType<typeof okCycle>): ReturnType<typeof okCycle> => ({ ...write, cycle: { ...write.cycle, account } });
      // acme polls at 10:50:00 + 30 s·i, globex 15 s later, 160 cycles each (to 12:10), connected 3 polls out of 4.
      const start = T0 + 50 * MINUTE;
      const box = (serial: string, i: number): ReturnType<typeof snap> => snap(serial, { connected: i % 4 !== 3, battery: 50 + (i % 3) });
      for (let i = 0; i < 160; i++) {
        const t = start + i * 30_000;
        await store.recordCycle(of('acme', okCycle(t, [box('acme/BX-001', i)])));
        // Restarts right after acme's first cycle of a new hour, before globex's: globex's open row is of the hour before.
        if (i === 20 || i === 140) store = await f.reopen();
        await store.recordCycle(of('globex', okCycle(t + 15_000, [box('globex/BX-001', i)])));
      }
      for (const serial of ['acme/BX-001', 'globex/BX-001']) {
        // Hours 10:00 (20 polls from 10:50) and 11:00 (120 polls) are closed, each fully covered from the first poll.
        const rollup = await store.history(serial, 'battery', T0, T0 + 2 * HOUR, { kind: 'rollup' });
        expect(rollup.kind === 'rollup' && rollup.points.map((p) => [p.t, p.count, p.mean])).toEqual([
          [T0, 20, expect.closeTo(51, 0)],
          [T0 + HOUR, 120, expect.closeTo(51, 0)],
        ]);
        // Every poll is in the raw history (the battery changes at each).
        const raw = await store.history(serial, 'battery', start, start + 81 * MINUTE, { kind: 'raw', maxPoints: 1000 });
        expect(raw.kind === 'raw' && raw.points.length).toBe(160);
      }
      expect(await store.uptime(T0 + HOUR, T0 + 2 * HOUR)).toEqual([
        { serial: 'acme/BX-001', name: 'Box acme/BX-001', connectedFraction: 0.75, observedMs: HOUR },
        { serial: 'globex/BX-001', name: 'Box globex/BX-001', connectedFraction: 0.75, observedMs: HOUR },
      ]);
      // Each observed from its first poll to its last (159 × 30 s) and the open segment's maximum gap after it.
      expect((await store.uptime(T0, T0 + 3 * HOUR)).map((r) => [r.serial, r.observedMs])).toEqual([
        ['acme/BX-001', 159 * 30_000 + MAX_GAP],
        ['globex/BX-001', 159 * 30_000 + MAX_GAP],
      ]);
    });

    it('a cycle that fails half-way is rolled back entirely, and recording goes on correctly', async () => {
      await poll(T0, 2, () => [snap('BX-001', { battery: 70 })]);
      const bad = okCycle(T0 + 60_000, [snap('BX-001', { battery: 69 }), snap('BX-002', { name: null as unknown as string })]);
      await expect(later(() => store.recordCycle(bad))).rejects.toThrow();
      expect((await store.lastCycle())?.startedAt).toBe(T0 + 30_000);
      expect((await store.box('BX-001'))?.battery).toBe(70);
      expect(await store.box('BX-002')).toBeUndefined();
      await store.recordCycle(okCycle(T0 + 60_000, [snap('BX-001', { battery: 68 })]));
      expect((await store.valueAt('BX-001', 'battery', T0 + 59_999))?.value).toBe(70);
      expect((await store.valueAt('BX-001', 'battery', T0 + 60_000))?.value).toBe(68);
    });

    it('keeps everything across close and reopen, including the open hour and the open segment', async () => {
      const last = await poll(T0 + 50 * MINUTE, 20, (_t, i) => [snap('BX-001', { battery: 90 - i })]);
      store = await f.reopen();
      expect((await store.box('BX-001'))?.battery).toBe(71);
      expect((await store.valueAt('BX-001', 'battery', last + 1))?.value).toBe(71);
      // Recording goes on in the same segment, across the hour boundary.
      await store.recordCycle(okCycle(last + 30_000, [snap('BX-001', { battery: 70 })]));
      const h = await store.history('BX-001', 'battery', T0 + 50 * MINUTE, last + 60_000);
      expect(h.kind === 'raw' && h.points.length).toBe(21);
      expect((await store.valueAt('BX-001', 'battery', last + 29_999))?.value).toBe(71);
    });
  });

  describe('history', () => {
    it('answers short ranges with raw points and long ones with hourly or coarser rollups, at most maxPoints', async () => {
      // Two days, polled every 2 minutes, of a battery that changes every poll: 1,440 raw points.
      const last = await poll(T0, 2 * 720, (_t, i) => [snap('BX-001', { battery: i % 30, signal: -60 - (i % 7) })], 2 * MINUTE);

      const short = await store.history('BX-001', 'battery', last - 2 * HOUR, last + 1);
      expect(short.kind).toBe('raw');
      expect(short.points.length).toBe(61);

      const day = await store.history('BX-001', 'battery', last - DAY, last + 1);
      expect(day.kind).toBe('rollup');
      if (day.kind !== 'rollup') return;
      expect(day.bucketMs).toBe(HOUR);
      expect(day.points.length).toBeLessThanOrEqual(25);
      const full = day.points[5];
      expect(full).toMatchObject({ count: 30, min: 0, max: 29 });

      const long = await store.history('BX-001', 'signal', T0, last + 1, { maxPoints: 20 });
      expect(long.kind).toBe('rollup');
      if (long.kind !== 'rollup') return;
      expect(long.bucketMs).toBe(3 * HOUR);
      expect(long.points.length).toBeLessThanOrEqual(20);
      expect(long.points[1]).toMatchObject({ min: -66, max: -60, count: 90 });
      expect(long.points[1]?.mean).toBeCloseTo(-63, 1);

      const conn = await store.history('BX-001', 'connected', T0, last + 1);
      expect(conn.kind).toBe('raw'); // never changed: one run
      expect(conn.points).toEqual([{ t: T0, value: 1, until: last + 1 }]);
    });

    it('names an unknown box and an empty range', async () => {
      await store.recordCycle(okCycle(T0, [snap('BX-001')]));
      await expect(later(() => store.history('BX-999', 'battery', T0, T0 + HOUR))).rejects.toThrow(new StoreError('unknown_box', 'unknown box BX-999'));
      await expect(later(() => store.history('BX-001', 'battery', T0, T0))).rejects.toThrow(expect.objectContaining({ code: 'bad_range' }));
      await expect(later(() => store.uptime(T0 + 1, T0))).rejects.toThrow(expect.objectContaining({ code: 'bad_range' }));
    });

    it('firmware history lists the versions a box ran', async () => {
      await poll(T0, 3, () => [snap('BX-001', { firmware: '3.4.1' })]);
      await poll(T0 + 90_000, 3, () => [snap('BX-001', { firmware: '3.4.2' })]);
      const h = await store.history('BX-001', 'firmware', T0, T0 + 10 * DAY);
      expect(h.kind).toBe('raw');
      expect(h.kind === 'raw' && h.points.map((p) => [p.t, p.value])).toEqual([
        [T0, '3.4.1'],
        [T0 + 90_000, '3.4.2'],
      ]);
    });
  });

  describe('uptime', () => {
    it('is the connected fraction of observed time per box; unobserved boxes have none', async () => {
      // BX-001 connected 3 polls out of 4; BX-002 always; BX-003 seen once, long before the range.
      await store.recordCycle(okCycle(T0 - 10 * HOUR, [snap('BX-003')]));
      await poll(T0, 4 * 120, (_t, i) => [snap('BX-001', { connected: i % 4 !== 3 }), snap('BX-002')]);
      const rows = await store.uptime(T0, T0 + 4 * HOUR);
      expect(rows).toEqual([
        { serial: 'BX-001', name: 'Box BX-001', connectedFraction: 0.75, observedMs: 4 * HOUR },
        { serial: 'BX-002', name: 'Box BX-002', connectedFraction: 1, observedMs: 4 * HOUR },
        { serial: 'BX-003', name: 'Box BX-003', connectedFraction: null, observedMs: 0 },
      ]);
      // A window with partial hours at both ends.
      const part = await store.uptime(T0 + 90 * MINUTE, T0 + 150 * MINUTE);
      expect(part[0]).toMatchObject({ connectedFraction: 0.75, observedMs: HOUR });
    });

    it('reads each box’s closed hours from its own account’s rollups: accounts in different open hours (one removed within the raw retention) answer as their polls', async () => {
      // Every 2 minutes: acme for 1 h 50 (then it leaves the configuration), beta until 3 h 30, default until 4 h 20.
      const models = new Map<string, Model>();
      const serials = ['BX-1', 'acme/BX-9', 'beta/BX-5'];
      for (let i = 0; i <= 130; i++) {
        const t = T0 + i * 2 * MINUTE;
        const polled: [string, ReturnType<typeof snap>][] = [['default', snap('BX-1', { connected: i % 3 !== 0 })]];
        if (i <= 55) polled.push(['acme', snap('acme/BX-9', { connected: i % 2 === 0 })]);
        if (i <= 105) polled.push(['beta', snap('beta/BX-5', { connected: i % 4 !== 3 })]);
        for (const [account, box] of polled) {
          const write = okCycle(t, [box]);
          await store.recordCycle({ ...write, cycle: { ...write.cycle, account } });
          let model = models.get(account);
          if (model === undefined) models.set(account, (model = new Model()));
          model.add(write);
        }
      }
      const expected = (from: number, to: number): [string, number, number | null][] =>
        serials.map((s) => {
          const m = (models.get(s.includes('/') ? (s.split('/')[0] as string) : 'default') as Model).uptime(s, from, to);
          return [s, m.observedMs, m.fraction];
        });
      const ranges = [
        [T0 + 30 * MINUTE, T0 + 270 * MINUTE],
        [T0, T0 + 5 * HOUR],
        [T0 + 2 * HOUR + 7 * MINUTE, T0 + 4 * HOUR],
        [T0 + 3 * HOUR, T0 + 4 * HOUR + 21 * MINUTE],
      ] as const;
      const answers = async (): Promise<unknown[]> => Promise.all(ranges.map(async ([from, to]) => (await store.uptime(from, to)).map((r) => [r.serial, r.observedMs, r.connectedFraction])));
      expect(expected(...ranges[0])[1]).toEqual(['acme/BX-9', 85 * MINUTE, 40 / 85]);
      expect(await answers()).toEqual(ranges.map(([from, to]) => expected(from, to)));
      store = await f.reopen(); // and after a restart
      expect(await answers()).toEqual(ranges.map(([from, to]) => expected(from, to)));
    });
  });

  describe('retention', () => {
    it('prunes raw points past raw retention and rollups past rollup retention, gradually; reads go on from what is kept', async () => {
      const boxes = Array.from({ length: 3 }, (_, i) => snap(`BX-${i}`));
      const last = await poll(T0, 3 * 24 * 30, () => boxes, 2 * MINUTE); // three days
      const first = await store.prune(last, { rawMs: DAY, rollupMs: 2 * DAY }, { maxRows: 50 });
      expect(first).toBeGreaterThan(0);
      // It stopped after about maxRows (one batch statement): the rest is left for the next calls.
      expect(await pruneGradually(store, last, { rawMs: DAY, rollupMs: 2 * DAY }, { batch: 50 })).toBeGreaterThan(0);
      expect(await store.prune(last, { rawMs: DAY, rollupMs: 2 * DAY })).toBe(0);
      expect(await store.valueAt('BX-1', 'battery', last - 2 * DAY)).toBeUndefined();
      expect((await store.valueAt('BX-1', 'battery', last - 20 * HOUR))?.value).toBe(80);
      expect((await store.history('BX-1', 'battery', last - 40 * HOUR, last)).kind).toBe('rollup');
      expect((await store.uptime(last - 40 * HOUR, last))[0]?.connectedFraction).toBe(1);
    });
    it('an account no longer polled (removed from the configuration) holds no raw row of the fleet back, also after a restart; its box keeps its last poll', async () => {
      const acme = okCycle(T0, [snap('acme/BX-9')]);
      await store.recordCycle({ ...acme, cycle: { ...acme.cycle, account: 'acme' } }); // then acme leaves the configuration
      const last = await poll(T0 + HOUR, 20 * 24, () => [snap('BX-1')], HOUR); // only the default account, 20 days
      const now = last + 30 * MINUTE;
      const retention = { rawMs: 3 * DAY, rollupMs: 10 * DAY };
      const uptime = await store.uptime(last - 9 * DAY, last - DAY);
      expect(uptime[0]?.observedMs).toBeGreaterThan(0);
      const pruned = async (): Promise<void> => {
        await pruneGradually(store, now, retention);
        expect((await store.history('BX-1', 'battery', now - 9 * DAY, now - 4 * DAY, { kind: 'raw' })).points).toEqual([]);
        expect((await store.history('BX-1', 'battery', now - 2 * DAY, now, { kind: 'raw' })).points.length).toBeGreaterThan(0);
        // The pruned hours are read from their rollups.
        expect(await store.uptime(last - 9 * DAY, last - DAY)).toEqual(uptime);
      };
      await pruned(); // by the daemon that recorded the cycles
      store = await f.reopen(); // a restart: the writer loads every account's latest cycle again
      await pruned();
      expect((await store.box('acme/BX-9'))?.lastPolled).toBe(T0);
    });

    it('a daemon stopped for longer than the raw retention keeps its open hour: the rows of its last hour wait for their rollup', async () => {
      const last = await poll(T0, 10, () => [snap('BX-1', { battery: 70 })], MINUTE);
      const now = last + 5 * DAY; // restarted five days later; raw retention is one day
      store = await f.reopen();
      await pruneGradually(store, now, { rawMs: DAY, rollupMs: 10 * DAY });
      await store.recordCycle(okCycle(now, [snap('BX-1', { battery: 70 })]));
      const rollup = await store.history('BX-1', 'battery', last - HOUR, last + HOUR, { kind: 'rollup' });
      expect(rollup.points.length).toBeGreaterThan(0);
    });
  });

  describe('retired accounts', () => {
    it('the cycle that retires an account no longer configured closes its open hour: its rollup is written, and its last hour outlives the raw retention', async () => {
      const of = (account: string, write: ReturnType<typeof okCycle>): ReturnType<typeof okCycle> => ({ ...write, cycle: { ...write.cycle, account } });
      // Both accounts polled every 30 s for 20 minutes of hour T0; acme's box half of it connected.
      for (let i = 0; i < 40; i++) {
        const t = T0 + i * 30_000;
        await store.recordCycle(of('default', okCycle(t, [snap('BX-1', { battery: 80 })])));
        await store.recordCycle(of('acme', okCycle(t, [snap('acme/BX-9', { battery: 40 + (i % 2), connected: i < 20 })])));
      }
      // acme leaves the configuration; after a restart (the state loaded from the database), default's cycle retires it.
      store = await f.reopen();
      const retiredAt = T0 + 40 * 30_000;
      const nothing = { states: new Map(), dropped: [], transitions: [], queued: [] };
      await store.commitCycle(of('default', okCycle(retiredAt, [snap('BX-1', { battery: 80 })])), retiredAt, () => ({ alerts: { ...nothing, forget: ['acme/BX-9'], retired: ['acme'] }, result: null }), undefined, {
        account: 'default',
        alsoNotIn: ['default'],
      });
      // default goes on polling into later hours; raw retention (2 h) then prunes hour T0's sample rows.
      const later = T0 + 3 * HOUR;
      for (let i = 0; i < 3; i++) await store.recordCycle(of('default', okCycle(later + i * 30_000, [snap('BX-1', { battery: 80 })])));
      const now = later + 2 * MINUTE;
      await pruneGradually(store, now, { rawMs: 2 * HOUR, rollupMs: 10 * DAY });
      expect((await store.history('acme/BX-9', 'battery', T0, T0 + HOUR, { kind: 'raw' })).points).toEqual([]); // the raw rows are gone
      // acme's box was observed from T0 until it was retired (its last poll held until then: less than the longest gap), connected half of it.
      const acme = (await store.uptime(T0, T0 + HOUR)).find((r) => r.serial === 'acme/BX-9');
      expect(acme).toMatchObject({ observedMs: retiredAt - T0, connectedFraction: 0.5 });
      const rollup = await store.history('acme/BX-9', 'battery', T0, T0 + HOUR, { kind: 'rollup' });
      expect(rollup.kind === 'rollup' && rollup.points.map((p) => [p.t, p.min, p.max, p.count])).toEqual([[T0, 40, 41, 40]]);
    });
  });

  describe('forgotten boxes', () => {
    it('leave the fleet but keep their history; listed again, they are back', async () => {
      await poll(T0, 2, () => [snap('BX-001', { battery: 50 }), snap('BX-002')]);
      await store.recordCycle(okCycle(T0 + 60_000, [snap('BX-002')], ['BX-001']));
      expect(await store.forgetBoxes(['BX-001', 'BX-404'], T0 + 90_000)).toBe(1);
      expect(await store.forgetBoxes(['BX-001'], T0 + 90_000)).toBe(0);
      expect((await store.boxes()).map((b) => b.serial)).toEqual(['BX-002']);
      expect((await store.box('BX-001'))?.missingSince).toBe(T0 + 60_000);
      expect((await store.valueAt('BX-001', 'battery', T0 + 30_000))?.value).toBe(50);
      expect((await store.history('BX-001', 'battery', T0, T0 + HOUR)).points).not.toHaveLength(0);
      store = await f.reopen();
      expect((await store.boxes()).map((b) => b.serial)).toEqual(['BX-002']);
      await store.recordCycle(okCycle(T0 + 120_000, [snap('BX-001', { battery: 49 }), snap('BX-002')]));
      expect((await store.boxes()).map((b) => b.serial)).toEqual(['BX-001', 'BX-002']);
      expect(await store.box('BX-001')).toMatchObject({ battery: 49, missingSince: null });
    });
  });
  });
}
