/**
 * The contract of the calls repository (`CallsRepo`, src/domain/calls.ts) as one suite any
 * store runs: what call ingestion writes (calls, the reading position, the daily rollups) and what
 * the rules, the CLI and the API read back. Every call is awaited, so a store that answers with
 * Promises (a network database) runs it unchanged. Run by calls.contract.test.ts against SQLite;
 * another store adds one `callsRepoContract(...)` call in its own *.contract.test.ts file.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dayOf, type CallObservation, type CallRecord, type CallsRepo, type CallSyncState } from '../../src/domain/calls.js';
import { callObservation } from '../helpers/calls.js';

export interface CallsRepoFixture {
  /** An empty repository. */
  repo: CallsRepo;
  close(): void | Promise<void>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Midnight UTC: day boundaries are easy to see. */
const T = Date.parse('2026-05-04T00:00:00Z');
const NO_SYNC: CallSyncState = { highWater: null, syncedAt: null, resume: null };

const call = (callId: string, over: Partial<CallObservation> = {}): CallObservation => callObservation(callId, { startedAt: T, ...over });

/** The stored form of an observation. */
function record(o: CallObservation): CallRecord {
  const { detailsRead: _read, wantsDetails: _wants, ...rest } = o;
  return rest;
}

const ids = (calls: readonly { callId: string }[]): string[] => calls.map((c) => c.callId);

export function callsRepoContract(name: string, make: () => CallsRepoFixture | Promise<CallsRepoFixture>): void {
  describe(`CallsRepo contract: ${name}`, () => {
    let f: CallsRepoFixture;
    let repo: CallsRepo;
    beforeEach(async () => {
      f = await make();
      repo = f.repo;
    });
    afterEach(async () => {
      await f.close();
    });

    /** One ingestion cycle's write at `now` (by default an hour after T); calls `initiated` for 10 minutes count as stuck. */
    function write(upserts: CallObservation[], options: { now?: number; checked?: string[]; sync?: CallSyncState; account?: string } = {}): unknown {
      return repo.write({ account: options.account ?? 'default', now: options.now ?? T + HOUR, upserts, checked: options.checked ?? [], sync: options.sync ?? NO_SYNC, stuckAfterMs: 10 * MINUTE });
    }

    describe('writing and reading back', () => {
      it('an empty repository has no reading position, no calls and no rollups', async () => {
        expect(await repo.syncState('default')).toEqual(NO_SYNC);
        expect(await repo.countSince(0, 'default')).toBe(0);
        expect(await repo.list({ limit: 10 })).toEqual([]);
        expect(await repo.lastCallAt()).toEqual(new Map());
        expect(await repo.rollups(0, dayOf(T) + 10)).toEqual([]);
        expect(await repo.dueForDetails(10, { account: 'default', checkedBefore: T + DAY, initiatedSince: 0 })).toEqual([]);
      });

      it('each write stores the reading position, an unfinished read included, and a complete read clears it', async () => {
        const unfinished: CallSyncState = { highWater: T - HOUR, syncedAt: T + 5_000, resume: { top: T + 30 * MINUTE, below: T + 10 * MINUTE, floor: T - 2 * HOUR } };
        await write([], { sync: unfinished });
        expect(await repo.syncState('default')).toEqual(unfinished);
        await write([], { sync: { highWater: T + 30 * MINUTE, syncedAt: T + 65_000, resume: null } });
        expect(await repo.syncState('default')).toEqual({ highWater: T + 30 * MINUTE, syncedAt: T + 65_000, resume: null });
      });

      it('stores a call whole: numbers, transcript, variables and recording state as observed', async () => {
        const full = call('c-1', { toNumber: '+14155550123', transcript: 'Hello "agent" <b>', variables: { order: '42', lang: 'fr' }, recording: 'available', detailsRead: true });
        const plain = call('c-2', { startedAt: T + MINUTE, status: 'failed', serial: 'BX-2', agentId: 102, direction: 'inbound' });
        await write([full, plain]);
        const listed = await repo.list({ limit: 10 });
        expect(ids(listed)).toEqual(['c-2', 'c-1']);
        expect(listed[0]).toMatchObject(record(plain));
        expect(listed[1]).toMatchObject(record(full));
        expect(await repo.known(['c-1', 'c-2', 'c-404'])).toEqual(
          new Map([
            ['c-1', { status: 'completed', recording: 'available' }],
            ['c-2', { status: 'failed', recording: null }],
          ]),
        );
      });

      it('a later observation updates status, end and duration, and keeps the details read before', async () => {
        await write([call('c-1', { status: 'initiated' })], { now: T + MINUTE });
        expect(await repo.known(['c-1'])).toEqual(new Map([['c-1', { status: 'initiated', recording: null }]]));
        const details = call('c-1', { recording: 'available', transcript: 'hi', variables: { order: '7' }, detailsRead: true, durationSec: 75, endedAt: T + 75_000 });
        await write([details], { now: T + 2 * MINUTE });
        // the list shows the call again without its details: what was read is kept
        await write([call('c-1', { durationSec: 75, endedAt: T + 75_000 })], { now: T + 3 * MINUTE });
        expect(await repo.list({ limit: 10 })).toEqual([expect.objectContaining(record(details))]);
        expect(await repo.known(['c-1'])).toEqual(new Map([['c-1', { status: 'completed', recording: 'available' }]]));
        expect(await repo.countSince(0, 'default')).toBe(1);
      });

      it('knows every call of a long list of ids (more than one batch)', async () => {
        const many = Array.from({ length: 1_200 }, (_, i) => call(`c-${i}`, { startedAt: T + i * 1_000 }));
        await write(many);
        const known = await repo.known([...ids(many), 'c-unknown']);
        expect(known.size).toBe(1_200);
        expect(known.get('c-1199')).toEqual({ status: 'completed', recording: null });
        expect(await repo.countSince(T + 1_000 * 1_000, 'default')).toBe(200);
      });
    });

    describe('calls due for details', () => {
      it('final calls wanting details first (oldest end first), then calls still initiated not read since checkedBefore (least recently read first)', async () => {
        const N1 = T + HOUR;
        const N2 = T + 2 * HOUR;
        await write(
          [
            call('late-end', { startedAt: T, endedAt: T + 3 * MINUTE, wantsDetails: true }),
            call('early-end', { startedAt: T + MINUTE, endedAt: T + 2 * MINUTE, status: 'failed', wantsDetails: true }),
            call('not-wanted', { startedAt: T + 2 * MINUTE }),
            call('open-read-first', { startedAt: T + 10 * MINUTE, status: 'initiated' }),
            call('open-read-later', { startedAt: T + 5 * MINUTE, status: 'initiated' }),
            call('open-too-old', { startedAt: T - 2 * DAY, status: 'initiated' }),
          ],
          { now: N1 },
        );
        await write([], { now: N2, checked: ['open-read-later'] }); // read again at N2, unchanged
        const due = (limit: number, checkedBefore: number) => repo.dueForDetails(limit, { account: 'default', checkedBefore, initiatedSince: T - DAY });

        expect(ids(await due(10, N2 + 1))).toEqual(['early-end', 'late-end', 'open-read-first', 'open-read-later']);
        expect(ids(await due(10, N2))).toEqual(['early-end', 'late-end', 'open-read-first']);
        expect(ids(await due(3, N2 + 1))).toEqual(['early-end', 'late-end', 'open-read-first']);
        expect(ids(await due(1, N2 + 1))).toEqual(['early-end']);
        expect(await due(0, N2 + 1)).toEqual([]);
        expect((await due(1, N2 + 1))[0]).toEqual(record(call('early-end', { startedAt: T + MINUTE, endedAt: T + 2 * MINUTE, status: 'failed' })));

        // once its details are read, a call is no longer due
        await write([call('early-end', { startedAt: T + MINUTE, endedAt: T + 2 * MINUTE, status: 'failed', recording: 'none', detailsRead: true, wantsDetails: true })], { now: N2 + 2 });
        expect(ids(await due(10, N2))).toEqual(['late-end', 'open-read-first']);
      });
    });

    describe('several accounts', () => {
      it("each account has its own reading position, its own calls due for details and its own count; the lists and figures hold every account's calls by box id", async () => {
        const N1 = T + HOUR;
        // The same gateway call id and serial in two accounts: stored apart under their keys (src/box-id.ts).
        await write([call('7', { startedAt: T + MINUTE, endedAt: T + 2 * MINUTE, status: 'completed', wantsDetails: true }), call('8', { startedAt: T + 2 * MINUTE, status: 'initiated' })], {
          now: N1,
          sync: { highWater: T + 2 * MINUTE, syncedAt: N1, resume: null },
        });
        await write([call('acme/7', { serial: 'acme/BX-1', startedAt: T + 3 * MINUTE, endedAt: T + 4 * MINUTE, status: 'failed' }), call('acme/9', { serial: 'acme/BX-1', startedAt: T + 5 * MINUTE, status: 'initiated' })], {
          now: N1,
          account: 'acme',
          sync: { highWater: T + 5 * MINUTE, syncedAt: N1 + 1, resume: null },
        });
        expect(await repo.syncState('default')).toEqual({ highWater: T + 2 * MINUTE, syncedAt: N1, resume: null });
        expect(await repo.syncState('acme')).toEqual({ highWater: T + 5 * MINUTE, syncedAt: N1 + 1, resume: null });
        expect(await repo.syncState('globex')).toEqual(NO_SYNC);
        expect(await repo.countSince(T, 'default')).toBe(2);
        expect(await repo.countSince(T, 'acme')).toBe(2);
        const due = (account: string) => repo.dueForDetails(10, { account, checkedBefore: N1 + 1, initiatedSince: T - DAY });
        expect(ids(await due('default'))).toEqual(['7', '8']);
        expect(ids(await due('acme'))).toEqual(['acme/9']);
        expect(ids(await repo.list({ limit: 10 }))).toEqual(['acme/9', 'acme/7', '8', '7']);
        expect(ids(await repo.list({ serial: 'acme/BX-1', limit: 10 }))).toEqual(['acme/9', 'acme/7']);
        expect(await repo.failureCounts({ since: T })).toEqual(new Map([['BX-1', { calls: 1, failed: 0 }], ['acme/BX-1', { calls: 1, failed: 1 }]]));
        expect(await repo.known(['7', 'acme/7', 'globex/7'])).toEqual(new Map([['7', { status: 'completed', recording: null }], ['acme/7', { status: 'failed', recording: null }]]));
      });

      it("stats per agent count each account's agents apart (agent ids are the vendor account's own): ACCOUNT/ID outside default", async () => {
        await write([call('1', { durationSec: 30 }), call('2', { startedAt: T + MINUTE, status: 'failed', agentId: 102 })]);
        await write([call('acme/1', { serial: 'acme/BX-1', durationSec: 50 }), call('acme/2', { serial: 'acme/BX-1', startedAt: T + MINUTE, durationSec: 70 })], { account: 'acme' });
        await write([call('globex/1', { serial: 'globex/BX-1', status: 'failed' })], { account: 'globex' });
        const options = { since: T, stuckBefore: T, by: 'agent' as const };
        expect(await repo.stats(options)).toEqual([
          { key: '101', placed: 1, completed: 1, failed: 0, stuck: 0, medianDurationSec: 30, archived: 0, lost: 0, test: 0 },
          { key: '102', placed: 1, completed: 0, failed: 1, stuck: 0, medianDurationSec: null, archived: 0, lost: 0, test: 0 },
          { key: 'acme/101', placed: 2, completed: 2, failed: 0, stuck: 0, medianDurationSec: 60, archived: 0, lost: 0, test: 0 },
          { key: 'globex/101', placed: 1, completed: 0, failed: 1, stuck: 0, medianDurationSec: null, archived: 0, lost: 0, test: 0 },
        ]);
      });
    });

    describe('lists', () => {
      it('newest first (ties by call id, highest first), in [since, until), per box, at most limit', async () => {
        await write([
          call('a', { startedAt: T }),
          call('b', { startedAt: T + MINUTE }),
          call('c', { startedAt: T + MINUTE }),
          call('d', { startedAt: T + 2 * MINUTE, serial: 'BX-2' }),
          call('e', { startedAt: T + 3 * MINUTE }),
        ]);
        expect(ids(await repo.list({ limit: 10 }))).toEqual(['e', 'd', 'c', 'b', 'a']);
        expect(ids(await repo.list({ limit: 2 }))).toEqual(['e', 'd']);
        expect(ids(await repo.list({ since: T + MINUTE, until: T + 3 * MINUTE, limit: 10 }))).toEqual(['d', 'c', 'b']);
        expect(ids(await repo.list({ serial: 'BX-1', since: T + MINUTE, limit: 10 }))).toEqual(['e', 'c', 'b']);
        expect(ids(await repo.list({ serial: 'BX-9', limit: 10 }))).toEqual([]);
        expect(await repo.countSince(T + MINUTE, 'default')).toBe(4);
        expect(await repo.lastCallAt()).toEqual(new Map([['BX-1', T + 3 * MINUTE], ['BX-2', T + 2 * MINUTE]]));
      });
    });

    describe('figures', () => {
      it('stats per box and per agent: placed, completed, failed, stuck, median duration, archived and lost recordings', async () => {
        await write([
          call('old', { startedAt: T - HOUR }), // before `since`: not counted
          call('1', { startedAt: T, durationSec: 30, recording: 'archived', detailsRead: true }),
          call('2', { startedAt: T + MINUTE, durationSec: 90, recording: 'expired', detailsRead: true }),
          call('3', { startedAt: T + 2 * MINUTE, durationSec: 60, agentId: 102 }),
          call('4', { startedAt: T + 3 * MINUTE, status: 'failed' }),
          call('5', { startedAt: T + 4 * MINUTE, status: 'initiated' }), // stuck: started before stuckBefore
          call('6', { startedAt: T + 30 * MINUTE, status: 'initiated', agentId: 102 }), // still young
          call('7', { startedAt: T, durationSec: 20, serial: 'BX-2', agentId: 102 }),
          call('8', { startedAt: T + MINUTE, durationSec: 40, serial: 'BX-2', agentId: 102 }),
        ]);
        const options = { since: T, stuckBefore: T + 20 * MINUTE };
        expect(await repo.stats({ ...options, by: 'box' })).toEqual([
          { key: 'BX-1', placed: 6, completed: 3, failed: 1, stuck: 1, medianDurationSec: 60, archived: 1, lost: 1, test: 0 },
          { key: 'BX-2', placed: 2, completed: 2, failed: 0, stuck: 0, medianDurationSec: 30, archived: 0, lost: 0, test: 0 },
        ]);
        expect(await repo.stats({ ...options, by: 'agent' })).toEqual([
          { key: '101', placed: 4, completed: 2, failed: 1, stuck: 1, medianDurationSec: 60, archived: 1, lost: 1, test: 0 },
          { key: '102', placed: 4, completed: 3, failed: 0, stuck: 0, medianDurationSec: 40, archived: 0, lost: 0, test: 0 },
        ]);
        expect(await repo.stats({ since: T + 4 * MINUTE, stuckBefore: T, by: 'box' })).toEqual([
          { key: 'BX-1', placed: 2, completed: 0, failed: 0, stuck: 0, medianDurationSec: null, archived: 0, lost: 0, test: 0 },
        ]);
      });

      it('failure buckets of one box: final calls per bucket from `from`, empty buckets left out', async () => {
        await write([
          call('1', { startedAt: T }),
          call('2', { startedAt: T + 5 * MINUTE, status: 'failed' }),
          call('3', { startedAt: T + 25 * MINUTE, status: 'failed' }),
          call('4', { startedAt: T + 26 * MINUTE, status: 'initiated' }), // not final
          call('5', { startedAt: T + 27 * MINUTE, status: 'failed', serial: 'BX-2' }), // another box
          call('6', { startedAt: T + 30 * MINUTE }), // at `to`: outside
          call('7', { startedAt: T - 1 }), // before `from`
        ]);
        expect(await repo.failureBuckets('BX-1', T, T + 30 * MINUTE, 10 * MINUTE)).toEqual([
          { index: 0, calls: 2, failed: 1 },
          { index: 2, calls: 1, failed: 1 },
        ]);
      });

      it('failure counts per box: final calls since, or only each box\'s newest N of them', async () => {
        await write([
          call('1', { startedAt: T, status: 'failed' }),
          call('2', { startedAt: T + MINUTE, status: 'failed' }),
          call('3', { startedAt: T + 2 * MINUTE }),
          call('4', { startedAt: T + 3 * MINUTE }),
          call('5', { startedAt: T + 4 * MINUTE, status: 'initiated' }),
          call('6', { startedAt: T + MINUTE, serial: 'BX-2', status: 'failed' }),
          call('7', { startedAt: T - HOUR, serial: 'BX-3', status: 'failed' }),
        ]);
        expect(await repo.failureCounts({ since: T })).toEqual(
          new Map([
            ['BX-1', { calls: 4, failed: 2 }],
            ['BX-2', { calls: 1, failed: 1 }],
          ]),
        );
        expect(await repo.failureCounts({ since: T, lastCalls: 3 })).toEqual(
          new Map([
            ['BX-1', { calls: 3, failed: 1 }],
            ['BX-2', { calls: 1, failed: 1 }],
          ]),
        );
      });

      it('stuck calls per box: still initiated, started in [startedAfter, startedBefore), with the oldest start', async () => {
        await write([
          call('1', { startedAt: T, status: 'initiated' }),
          call('2', { startedAt: T + MINUTE, status: 'initiated' }),
          call('3', { startedAt: T + 2 * MINUTE }), // final
          call('4', { startedAt: T + 10 * MINUTE, status: 'initiated' }), // at startedBefore: outside
          call('5', { startedAt: T - MINUTE, status: 'initiated' }), // before startedAfter
          call('6', { startedAt: T + 5 * MINUTE, status: 'initiated', serial: 'BX-2' }),
        ]);
        expect(await repo.stuckCalls(T + 10 * MINUTE, T)).toEqual(
          new Map([
            ['BX-1', { count: 2, oldest: T }],
            ['BX-2', { count: 1, oldest: T + 5 * MINUTE }],
          ]),
        );
      });

      it('daily rollups per day, box and agent follow the stored calls, also when a call changes later', async () => {
        const day = dayOf(T);
        await write(
          [
            call('1', { startedAt: T + HOUR, durationSec: 30 }),
            call('2', { startedAt: T + 2 * HOUR, status: 'failed' }),
            call('3', { startedAt: T + 3 * HOUR, status: 'initiated' }),
            call('4', { startedAt: T + 4 * HOUR, agentId: 102, durationSec: 45 }),
            call('5', { startedAt: T + DAY + HOUR, durationSec: 10 }),
          ],
          { now: T + 3 * HOUR + 5 * MINUTE }, // call 3 is initiated for 5 minutes: not stuck yet
        );
        expect(await repo.rollups(day, day + 1)).toEqual([
          { day, serial: 'BX-1', agentId: 101, placed: 3, completed: 1, failed: 1, stuck: 0, talkSec: 30 },
          { day, serial: 'BX-1', agentId: 102, placed: 1, completed: 1, failed: 0, stuck: 0, talkSec: 45 },
          { day: day + 1, serial: 'BX-1', agentId: 101, placed: 1, completed: 1, failed: 0, stuck: 0, talkSec: 10 },
        ]);
        // read again later, still initiated: now stuck
        await write([], { now: T + 3 * HOUR + 20 * MINUTE, checked: ['3'] });
        expect((await repo.rollups(day, day))[0]).toMatchObject({ agentId: 101, placed: 3, completed: 1, failed: 1, stuck: 1 });
        // then it completes
        await write([call('3', { startedAt: T + 3 * HOUR, durationSec: 100 })], { now: T + 4 * HOUR });
        expect((await repo.rollups(day, day))[0]).toEqual({ day, serial: 'BX-1', agentId: 101, placed: 3, completed: 2, failed: 1, stuck: 0, talkSec: 130 });
        expect(await repo.rollups(day + 1, day + 1)).toHaveLength(1);
      });

      it('daily callers: the boxes that placed calls on every day of the range', async () => {
        const day = dayOf(T);
        await write([
          call('1', { startedAt: T }),
          call('2', { startedAt: T + DAY }),
          call('3', { startedAt: T + 2 * DAY, status: 'failed' }),
          call('4', { startedAt: T, serial: 'BX-2' }),
          call('5', { startedAt: T + 2 * DAY, serial: 'BX-2' }), // no call on the middle day
          call('6', { startedAt: T + DAY, serial: 'BX-3' }),
        ]);
        expect(await repo.dailyCallers(day, day + 2)).toEqual(new Set(['BX-1']));
        expect(await repo.dailyCallers(day + 1, day + 2)).toEqual(new Set(['BX-1']));
        expect(await repo.dailyCallers(day, day)).toEqual(new Set(['BX-1', 'BX-2']));
      });
    });

    describe('retention', () => {
      it('prune deletes the calls started before callsBefore and the rollups of days before rollupsBefore, and says how many rows', async () => {
        const day = dayOf(T);
        await write([call('old', { startedAt: T - DAY }), call('edge', { startedAt: T }), call('new', { startedAt: T + DAY })]);
        expect(await repo.rollups(day - 1, day + 1)).toHaveLength(3);
        expect(await repo.prune(T, T - DAY, 0)).toBe(0); // no budget: nothing deleted
        expect(await repo.countSince(0, 'default')).toBe(3);

        expect(await repo.prune(T, T)).toBe(2); // one call, one rollup (its day)
        expect(ids(await repo.list({ limit: 10 }))).toEqual(['new', 'edge']);
        expect((await repo.rollups(day - 1, day + 1)).map((r) => r.day)).toEqual([day, day + 1]);
        expect(await repo.lastCallAt()).toEqual(new Map([['BX-1', T + DAY]]));
        expect(await repo.prune(T, T)).toBe(0);
      });
    });
  });
}
