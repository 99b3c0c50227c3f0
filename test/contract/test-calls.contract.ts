/**
 * The contract of the test-calls repository (`TestCallsRepo`, src/domain/test-calls.ts) as
 * one suite any store runs: the attempts of `test_calls:` entries, the daily caps counted on them
 * (per box and per entry, per UTC day; skipped attempts never count, a reservation whose process
 * died keeps counting), and what the verdicts read back. Every call is awaited, so a store that
 * answers with Promises runs it unchanged. Run by test-calls.contract.test.ts (SQLite) and
 * test-calls.pg.contract.test.ts (PostgreSQL).
 *
 * The fixture opens the same database as often as a test asks (`open`): two handles are two
 * processes sharing the caps (the daemon and `boxwatch test-call run`, or two replicas).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dayOf, type CallObservation, type CallsRepo } from '../../src/domain/calls.js';
import type { Reservation, TestCallsRepo } from '../../src/domain/test-calls.js';
import { callObservation } from '../helpers/calls.js';

/** One process's view of the database. */
export interface TestCallsHandle {
  testCalls: TestCallsRepo;
  /** The calls the call sync writes (how each test call ended). */
  calls: CallsRepo;
  close(): void | Promise<void>;
}

export interface TestCallsFixture {
  /** Another handle on the fixture's one database (empty when the fixture was made). */
  open(): Promise<TestCallsHandle>;
  /** Removes the database (every handle closed before). */
  cleanup(): void | Promise<void>;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** 2026-05-04T09:00Z. */
const T = Date.parse('2026-05-04T09:00:00Z');
const D = dayOf(T);
const CAPS = { perBox: 2, total: 3 };

export function testCallsRepoContract(name: string, make: () => TestCallsFixture | Promise<TestCallsFixture>): void {
  describe(`TestCallsRepo contract: ${name}`, () => {
    let f: TestCallsFixture;
    let handles: TestCallsHandle[];
    let repo: TestCallsRepo;
    let calls: CallsRepo;

    async function open(): Promise<TestCallsHandle> {
      const h = await f.open();
      handles.push(h);
      return h;
    }
    async function close(h: TestCallsHandle): Promise<void> {
      handles = handles.filter((x) => x !== h);
      await h.close();
    }

    beforeEach(async () => {
      f = await make();
      handles = [];
      ({ testCalls: repo, calls } = await open());
    });
    afterEach(async () => {
      for (const h of handles) await h.close();
      await f.cleanup();
    });

    const reserve = (serial: string, over: { entry?: string; at?: number; caps?: { perBox: number; total: number }; on?: TestCallsRepo } = {}) => {
      const at = over.at ?? T;
      return (over.on ?? repo).reserve({ entry: over.entry ?? 'path', serial, agentId: 101, day: dayOf(at), at, caps: over.caps ?? CAPS });
    };
    const skip = (serial: string, reason: string, at = T) => repo.skipped({ entry: 'path', serial, agentId: 101, day: dayOf(at), at, reason });
    const okId = (r: Reservation): number => {
      if (!r.ok) throw new Error(`expected a reservation, got the ${r.cap} cap`);
      return r.id;
    };
    const writeCalls = (upserts: CallObservation[]) => calls.write({ account: 'default', now: T + 10 * MINUTE, upserts, checked: [], sync: { highWater: null, syncedAt: null, resume: null }, stuckAfterMs: 10 * MINUTE });

    it('an empty repository has used nothing, has no test calls and prunes nothing', async () => {
      expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 0, total: 0 });
      expect(await repo.recent(10)).toEqual(new Map());
      expect(await repo.entriesOf(['c-1'])).toEqual(new Map());
      expect(await repo.entriesOf([])).toEqual(new Map());
      expect(await repo.prune(T + DAY)).toBe(0);
    });

    describe('caps', () => {
      it('a reservation counts at once and reports what is used with it; the per-box cap refuses the box, not the others', async () => {
        const first = await reserve('BX-1');
        expect(first).toEqual({ ok: true, id: expect.any(Number), used: { box: 1, total: 1 } });
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 1, total: 1 });
        expect(await reserve('BX-1')).toMatchObject({ ok: true, used: { box: 2, total: 2 } });
        expect(await reserve('BX-1')).toEqual({ ok: false, cap: 'per_box', used: { box: 2, total: 2 } });
        expect(await repo.used('path', D, 'BX-2')).toEqual({ box: 0, total: 2 });
        expect(await reserve('BX-2')).toMatchObject({ ok: true, used: { box: 1, total: 3 } });
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 2, total: 3 });
      });

      it('the total cap refuses every box once the entry has used it, whatever their own count', async () => {
        const caps = { perBox: 5, total: 2 };
        await reserve('BX-1', { caps });
        await reserve('BX-2', { caps });
        expect(await reserve('BX-3', { caps })).toEqual({ ok: false, cap: 'total', used: { box: 0, total: 2 } });
        expect(await repo.used('path', D, 'BX-3')).toEqual({ box: 0, total: 2 });
      });

      it('refused reservations write nothing: the count stays at the cap', async () => {
        await reserve('BX-1');
        await reserve('BX-1');
        for (let i = 0; i < 3; i++) expect((await reserve('BX-1')).ok).toBe(false);
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 2, total: 2 });
        expect([...(await repo.recent(10)).get('BX-1')!].map((c) => c.state)).toEqual(['reserved', 'reserved']);
      });

      it('caps are per entry and per UTC day: another entry and the next day start from zero', async () => {
        await reserve('BX-1');
        await reserve('BX-1');
        expect((await reserve('BX-1', { entry: 'other' })).ok).toBe(true);
        expect(await repo.used('other', D, 'BX-1')).toEqual({ box: 1, total: 1 });
        const nextDay = T + DAY;
        expect(await reserve('BX-1', { at: nextDay })).toMatchObject({ ok: true, used: { box: 1, total: 1 } });
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 2, total: 2 });
        // the day is the UTC day: 23:59 and 00:00 count on different days
        const midnight = (D + 2) * DAY;
        await reserve('BX-9', { at: midnight - 1 });
        expect(await repo.used('path', D + 1, 'BX-9')).toEqual({ box: 1, total: 2 });
        expect(await repo.used('path', D + 2, 'BX-9')).toEqual({ box: 0, total: 0 });
      });

      it('skipped attempts are recorded but never count; placed, rejected and reserved ones all count', async () => {
        const caps = { perBox: 3, total: 10 };
        await skip('BX-1', 'box BX-1 was disconnected at the last poll');
        await skip('BX-1', 'daily cap reached');
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 0, total: 0 });
        await repo.placed(okId(await reserve('BX-1', { caps })), 'c-1');
        await repo.rejected(okId(await reserve('BX-1', { caps })), 'make-call failed: http 503');
        await reserve('BX-1', { caps }); // its process died before the gateway answered
        expect(await repo.used('path', D, 'BX-1')).toEqual({ box: 3, total: 3 });
        expect(await reserve('BX-1', { caps })).toEqual({ ok: false, cap: 'per_box', used: { box: 3, total: 3 } });
      });

      it('a reservation left by a process that died keeps counting in the next process (never more calls than the caps)', async () => {
        const dying = await open();
        expect((await reserve('BX-1', { on: dying.testCalls })).ok).toBe(true);
        expect((await reserve('BX-1', { on: dying.testCalls })).ok).toBe(true);
        await close(dying); // killed between the reservation and make-call's answer: no placed(), no rejected()
        const next = await open();
        expect(await next.testCalls.used('path', D, 'BX-1')).toEqual({ box: 2, total: 2 });
        expect(await reserve('BX-1', { on: next.testCalls })).toEqual({ ok: false, cap: 'per_box', used: { box: 2, total: 2 } });
        const left = (await next.testCalls.recent(10)).get('BX-1') ?? [];
        expect(left.map((c) => [c.state, c.callId])).toEqual([
          ['reserved', null],
          ['reserved', null],
        ]);
      });

      it('two processes reserving at once never take more than the caps between them', async () => {
        const other = await open();
        const caps = { perBox: 3, total: 5 };
        const attempts = Array.from({ length: 24 }, (_, i) => reserve(`BX-${i % 4}`, { caps, on: i % 2 === 0 ? repo : other.testCalls }));
        const results = await Promise.all(attempts);
        const granted = results.filter((r) => r.ok);
        expect(granted).toHaveLength(5);
        expect(new Set(granted.map((r) => (r.ok ? r.id : 0))).size).toBe(5);
        for (const r of results) expect(r.used.total).toBeLessThanOrEqual(5);
        expect((await repo.used('path', D, 'BX-0')).total).toBe(5);
        const perBox = [...(await repo.recent(10)).values()].map((list) => list.length);
        for (const n of perBox) expect(n).toBeLessThanOrEqual(3);
        expect(perBox.reduce((a, b) => a + b, 0)).toBe(5);
      });
    });

    describe('outcomes and what is read back', () => {
      it('placed stores the call id (entriesOf finds the entry), rejected stores the reason; skipped attempts are no test calls', async () => {
        const a = okId(await reserve('BX-1', { at: T }));
        const b = okId(await reserve('BX-2', { at: T + 1 }));
        await repo.placed(a, 'c-100');
        await repo.rejected(b, 'make-call failed: box BX-2 is busy <b>"x"</b>');
        await skip('BX-3', 'box BX-3 is not connected', T + 2);
        const recent = await repo.recent(10);
        expect(recent.get('BX-1')).toEqual([
          { id: a, entry: 'path', serial: 'BX-1', agentId: 101, day: D, at: T, state: 'placed', callId: 'c-100', reason: null, callStatus: null, durationSec: null },
        ]);
        expect(recent.get('BX-2')).toEqual([
          { id: b, entry: 'path', serial: 'BX-2', agentId: 101, day: D, at: T + 1, state: 'rejected', callId: null, reason: 'make-call failed: box BX-2 is busy <b>"x"</b>', callStatus: null, durationSec: null },
        ]);
        expect(recent.has('BX-3')).toBe(false); // skipped attempts are not test calls
        expect(await repo.entriesOf(['c-100', 'c-404'])).toEqual(new Map([['c-100', 'path']]));
      });

      it('recent: per box its newest test calls (at most perBox, newest first, ties by the later reservation), each with its call as the call sync stored it', async () => {
        const caps = { perBox: 10, total: 100 };
        const ids: number[] = [];
        for (let i = 0; i < 4; i++) {
          const id = okId(await reserve('BX-1', { caps, at: T + i * MINUTE }));
          ids.push(id);
          await repo.placed(id, `c-${i}`);
        }
        const tie = okId(await reserve('BX-1', { caps, at: T + 3 * MINUTE })); // same time as c-3, reserved later
        await skip('BX-1', 'disconnected', T + 9 * MINUTE);
        await repo.placed(okId(await reserve('BX-0', { caps, at: T })), 'c-other');
        await writeCalls([
          callObservation('c-3', { serial: 'BX-1', startedAt: T + 3 * MINUTE, status: 'completed', durationSec: 42 }),
          callObservation('c-2', { serial: 'BX-1', startedAt: T + 2 * MINUTE, status: 'failed' }),
          callObservation('c-1', { serial: 'BX-1', startedAt: T + MINUTE, status: 'initiated' }),
        ]);
        const recent = await repo.recent(3);
        expect([...recent.keys()]).toEqual(['BX-0', 'BX-1']);
        expect(recent.get('BX-1')!.map((c) => [c.id, c.callId, c.callStatus, c.durationSec])).toEqual([
          [tie, null, null, null],
          [ids[3], 'c-3', 'completed', 42],
          [ids[2], 'c-2', 'failed', 0],
        ]);
        expect((await repo.recent(10)).get('BX-1')!.map((c) => c.callStatus)).toEqual([null, 'completed', 'failed', 'initiated', null]);
        expect((await repo.recent(1)).get('BX-0')!.map((c) => c.callId)).toEqual(['c-other']);
      });

      it('entriesOf finds the entries of a long list of call ids (more than one batch)', async () => {
        const caps = { perBox: 10_000, total: 10_000 };
        for (let i = 0; i < 30; i++) await repo.placed(okId(await reserve('BX-1', { caps, entry: i % 2 === 0 ? 'even' : 'odd' })), `c-${i}`);
        const asked = [...Array.from({ length: 1_200 }, (_, i) => `unknown-${i}`), 'c-0', 'c-29', 'c-7'];
        expect(await repo.entriesOf(asked)).toEqual(
          new Map([
            ['c-0', 'even'],
            ['c-29', 'odd'],
            ['c-7', 'odd'],
          ]),
        );
      });
    });

    it('prune deletes every attempt older than `before` (skipped ones too), in batches, and returns how many', async () => {
      const caps = { perBox: 10_000, total: 10_000 };
      for (let i = 0; i < 1_100; i++) await skip('BX-1', 'disconnected', T - DAY + i);
      await reserve('BX-1', { caps, at: T - 1 });
      const kept = okId(await reserve('BX-1', { caps, at: T }));
      expect(await repo.prune(T)).toBe(1_101);
      expect((await repo.recent(10)).get('BX-1')!.map((c) => c.id)).toEqual([kept]);
      expect(await repo.used('path', dayOf(T - 1), 'BX-1')).toEqual({ box: 1, total: 1 });
      expect(await repo.prune(T)).toBe(0);
    });
  });
}
