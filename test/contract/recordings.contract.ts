/**
 * The contract of the recordings repository (`RecordingsRepo`, src/domain/recordings.ts) as
 * one suite any store runs: which recordings are due for the archive, the retry schedule of
 * failed downloads, archived and lost recordings (each moving `calls.recording` in the same
 * write), retention's reads and deletes, and the totals /metrics shows. Every call is awaited, so
 * a store that answers with Promises runs it unchanged. Run by recordings.contract.test.ts
 * (SQLite) and recordings.pg.contract.test.ts (PostgreSQL).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CallObservation, CallsRepo } from '../../src/domain/calls.js';
import type { ArchivedRecording, RecordingsRepo } from '../../src/domain/recordings.js';
import { callObservation } from '../helpers/calls.js';

export interface RecordingsFixture {
  /** An empty repository. */
  recordings: RecordingsRepo;
  /** The calls of the same database (the call sync's writes). */
  calls: CallsRepo;
  close(): void | Promise<void>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T = Date.parse('2026-05-04T00:00:00Z');

/** A completed call of `serial` with a recording available, ended at `endedAt`. */
const withRecording = (callId: string, endedAt: number, serial = 'BX-1'): CallObservation =>
  callObservation(callId, { serial, startedAt: endedAt - 60_000, endedAt, recording: 'available', detailsRead: true });

function archivedRecording(callId: string, over: Partial<ArchivedRecording> = {}): ArchivedRecording {
  return {
    callId,
    serial: 'BX-1',
    path: `2026/05/04/${callId}.wav`,
    sha256: `sha-${callId}`,
    bytes: 1_000,
    sidecar: `2026/05/04/${callId}.json`,
    sidecarSha256: `sidecar-sha-${callId}`,
    archivedAt: T + HOUR,
    archive: 'host-a-00000001',
    ...over,
  };
}

export function recordingsRepoContract(name: string, make: () => RecordingsFixture | Promise<RecordingsFixture>): void {
  describe(`RecordingsRepo contract: ${name}`, () => {
    let f: RecordingsFixture;
    let repo: RecordingsRepo;
    let calls: CallsRepo;
    beforeEach(async () => {
      f = await make();
      ({ recordings: repo, calls } = f);
    });
    afterEach(async () => {
      await f.close();
    });

    const writeCalls = (upserts: CallObservation[], now = T + DAY) =>
      calls.write({ account: 'default', now, upserts, checked: [], sync: { highWater: null, syncedAt: null, resume: null }, stuckAfterMs: 10 * MINUTE });
    const recordingOf = async (callId: string) => (await calls.known([callId])).get(callId)?.recording;
    const dueIds = async (now: number, limit = 100) => (await repo.due(now, limit)).map((d) => d.call.callId);

    it('an empty repository has nothing due, archived or lost', async () => {
      expect(await repo.due(T + DAY, 10)).toEqual([]);
      expect(await repo.lostSince(0)).toEqual(new Map());
      expect(await repo.archivedAll()).toEqual([]);
      expect(await repo.archivedBefore(T + DAY, 10, 'host-a-00000001')).toEqual([]);
      expect(await repo.archives()).toEqual([]);
      expect(await repo.totals()).toEqual({ files: 0, bytes: 0 });
      expect(await repo.pruneOrphans()).toBe(0);
    });

    describe('due', () => {
      it('the calls whose recording is available, oldest end first (ties by call id), at most limit, each with the whole call and no attempts yet', async () => {
        const late = withRecording('c-late', T + 3 * MINUTE);
        await writeCalls([
          late,
          withRecording('c-b', T + MINUTE),
          withRecording('c-a', T + MINUTE),
          callObservation('c-none', { recording: 'none', detailsRead: true }),
          callObservation('c-unread'),
        ]);
        expect(await dueIds(T + DAY)).toEqual(['c-a', 'c-b', 'c-late']);
        expect(await dueIds(T + DAY, 2)).toEqual(['c-a', 'c-b']);
        expect(await repo.due(T + DAY, 0)).toEqual([]);
        const [, , last] = await repo.due(T + DAY, 10);
        const { detailsRead: _r, wantsDetails: _w, ...stored } = late;
        expect(last).toEqual({ call: stored, attempts: 0 });
      });

      it('a failed attempt is counted and holds the recording back until its next attempt is due', async () => {
        await writeCalls([withRecording('c-1', T + MINUTE), withRecording('c-2', T + 2 * MINUTE)]);
        await repo.failed('c-1', 'BX-1', T + HOUR, 'http_503');
        expect(await dueIds(T + HOUR - 1)).toEqual(['c-2']);
        expect(await repo.due(T + HOUR, 10)).toEqual([expect.objectContaining({ attempts: 1 }), expect.objectContaining({ attempts: 0 })]);
        await repo.failed('c-1', 'BX-1', T + 2 * HOUR, 'ENOSPC');
        expect(await dueIds(T + HOUR)).toEqual(['c-2']);
        expect((await repo.due(T + 2 * HOUR, 10))[0]).toMatchObject({ call: { callId: 'c-1' }, attempts: 2 });
        // a failed download is not an archived recording
        expect(await repo.archivedAll()).toEqual([]);
        expect(await recordingOf('c-1')).toBe('available');
      });
    });

    describe('archived and lost', () => {
      it('archived: the call becomes archived (no longer due, kept by later observations) and the recording is listed and counted', async () => {
        await writeCalls([withRecording('c-1', T + MINUTE), withRecording('c-2', T + 2 * MINUTE)]);
        await repo.failed('c-1', 'BX-1', T, 'http_503');
        const rec = archivedRecording('c-1', { bytes: 4_321 });
        await repo.archived(rec);
        expect(await recordingOf('c-1')).toBe('archived');
        expect(await dueIds(T + DAY)).toEqual(['c-2']);
        expect(await repo.archivedAll()).toEqual([rec]);
        expect(await repo.totals()).toEqual({ files: 1, bytes: 4_321 });
        // the call list shows the call again, its recording still available at the gateway: it stays archived
        await writeCalls([withRecording('c-1', T + MINUTE)], T + 2 * DAY);
        expect(await recordingOf('c-1')).toBe('archived');
        expect(await dueIds(T + 3 * DAY)).toEqual(['c-2']);
      });

      it('archiving again replaces the stored file, its checksums and time', async () => {
        await writeCalls([withRecording('c-1', T + MINUTE)]);
        await repo.archived(archivedRecording('c-1'));
        const again = archivedRecording('c-1', { path: '2026/05/05/c-1.wav', sha256: 'new', bytes: 7, sidecar: '2026/05/05/c-1.json', sidecarSha256: 'new-side', archivedAt: T + DAY });
        await repo.archived(again);
        expect(await repo.archivedAll()).toEqual([again]);
        expect(await repo.totals()).toEqual({ files: 1, bytes: 7 });
      });

      it('lost: the call becomes expired (no longer due) and the loss is counted per box since a time, with the last one found', async () => {
        await writeCalls([withRecording('c-1', T + MINUTE), withRecording('c-2', T + 2 * MINUTE), withRecording('c-3', T + 3 * MINUTE, 'BX-2'), withRecording('c-4', T + 4 * MINUTE)]);
        await repo.lost('c-1', 'BX-1', T + HOUR);
        await repo.lost('c-2', 'BX-1', T + 2 * HOUR);
        await repo.lost('c-3', 'BX-2', T + 3 * HOUR);
        expect(await recordingOf('c-1')).toBe('expired');
        expect(await dueIds(T + DAY)).toEqual(['c-4']);
        expect(await repo.lostSince(T)).toEqual(
          new Map([
            ['BX-1', { count: 2, last: T + 2 * HOUR }],
            ['BX-2', { count: 1, last: T + 3 * HOUR }],
          ]),
        );
        expect(await repo.lostSince(T + 2 * HOUR)).toEqual(
          new Map([
            ['BX-1', { count: 1, last: T + 2 * HOUR }],
            ['BX-2', { count: 1, last: T + 3 * HOUR }],
          ]),
        );
        expect(await repo.lostSince(T + 3 * HOUR + 1)).toEqual(new Map());
        // lost recordings are not in the archive
        expect(await repo.totals()).toEqual({ files: 0, bytes: 0 });
      });

      it('a loss reported for a recording already archived leaves the call archived', async () => {
        await writeCalls([withRecording('c-1', T + MINUTE)]);
        await repo.archived(archivedRecording('c-1'));
        await repo.lost('c-1', 'BX-1', T + HOUR);
        expect(await recordingOf('c-1')).toBe('archived');
      });
    });

    describe('retention', () => {
      it('archivedAll in path order; archivedBefore oldest first, before `before`, at most limit', async () => {
        const recs = [
          archivedRecording('c-1', { path: '2026/05/06/b.wav', archivedAt: T + 3 * HOUR }),
          archivedRecording('c-2', { path: '2026/05/04/z.wav', archivedAt: T + 1 * HOUR }),
          archivedRecording('c-3', { path: '2026/05/05/a.wav', archivedAt: T + 2 * HOUR }),
          archivedRecording('c-4', { path: '2026/05/04/Z.wav', archivedAt: T + 4 * HOUR }),
        ];
        await writeCalls(recs.map((r, i) => withRecording(r.callId, T + i * MINUTE)));
        for (const r of recs) await repo.archived(r);
        await writeCalls([withRecording('c-5', T + 9 * MINUTE)]);
        await repo.failed('c-5', 'BX-1', T + DAY, 'http_503'); // a retry row: not archived
        expect((await repo.archivedAll()).map((r) => r.path)).toEqual(['2026/05/04/Z.wav', '2026/05/04/z.wav', '2026/05/05/a.wav', '2026/05/06/b.wav']);
        const A = 'host-a-00000001';
        expect((await repo.archivedBefore(T + 3 * HOUR, 10, A)).map((r) => r.callId)).toEqual(['c-2', 'c-3']);
        expect((await repo.archivedBefore(T + 5 * HOUR, 3, A)).map((r) => r.callId)).toEqual(['c-2', 'c-3', 'c-1']);
        expect(await repo.archivedBefore(T + HOUR, 10, A)).toEqual([]);
      });

      it('each recording says its archive directory: archivedBefore gives one archive’s only, archives counts them per archive, claim gives recordings (of before archive ids, or of another id) to one', async () => {
        const recs = [
          archivedRecording('c-1', { archive: 'host-a-00000001', archivedAt: T + HOUR }),
          archivedRecording('c-2', { archive: 'host-b-00000002', archivedAt: T + 2 * HOUR }),
          archivedRecording('c-3', { archive: 'host-b-00000002', archivedAt: T + 3 * HOUR }),
          archivedRecording('c-4', { archive: null, archivedAt: T + 4 * HOUR }),
          archivedRecording('c-5', { archive: null, archivedAt: T + 5 * HOUR }),
        ];
        await writeCalls(recs.map((r, i) => withRecording(r.callId, T + i * MINUTE)));
        for (const r of recs) await repo.archived(r);
        expect((await repo.archivedBefore(T + DAY, 10, 'host-a-00000001')).map((r) => r.callId)).toEqual(['c-1']);
        expect((await repo.archivedBefore(T + DAY, 10, 'host-b-00000002')).map((r) => r.callId)).toEqual(['c-2', 'c-3']);
        expect(await repo.archives()).toEqual([
          { archive: 'host-a-00000001', recordings: 1, lastArchivedAt: T + HOUR },
          { archive: 'host-b-00000002', recordings: 2, lastArchivedAt: T + 3 * HOUR },
        ]);
        await repo.claim(['c-4', 'c-2'], 'host-a-00000001'); // c-2's files were found in host-a's directory: it is host-a's now
        await repo.claim([], 'host-a-00000001');
        expect((await repo.archivedAll()).map((r) => [r.callId, r.archive])).toEqual([
          ['c-1', 'host-a-00000001'],
          ['c-2', 'host-a-00000001'],
          ['c-3', 'host-b-00000002'],
          ['c-4', 'host-a-00000001'],
          ['c-5', null],
        ]);
        expect((await repo.archivedBefore(T + DAY, 10, 'host-a-00000001')).map((r) => r.callId)).toEqual(['c-1', 'c-2', 'c-4']);
      });

      it('otherArchives lists the archive directories other than the one given that archived recordings are listed in, on either side of its id, each with its newest recording, until none is', async () => {
        expect(await repo.otherArchives('host-m-00000001')).toEqual([]);
        const recs = [
          archivedRecording('c-1', { archive: 'host-m-00000001', archivedAt: T + 9 * HOUR }),
          archivedRecording('c-2', { archive: null }), // archived before archive ids: not another directory
          archivedRecording('c-3', { archive: 'host-z-00000003', archivedAt: T + 2 * HOUR }),
          archivedRecording('c-4', { archive: 'host-a-00000004', archivedAt: T + 3 * HOUR }),
          archivedRecording('c-5', { archive: 'host-z-00000003', archivedAt: T + 5 * HOUR }),
          archivedRecording('c-6', { archive: 'host-z-00000003', archivedAt: T + 4 * HOUR }),
        ];
        await writeCalls(recs.map((r, i) => withRecording(r.callId, T + i * MINUTE)));
        for (const r of recs.slice(0, 2)) await repo.archived(r);
        await repo.failed('c-3', 'BX-1', T, 'http_503'); // not archived: no directory holds it
        expect(await repo.otherArchives('host-m-00000001')).toEqual([]);
        await repo.archived(recs[2] as ArchivedRecording); // after the given id
        expect(await repo.otherArchives('host-m-00000001')).toEqual([{ archive: 'host-z-00000003', lastArchivedAt: T + 2 * HOUR }]);
        expect(await repo.otherArchives('host-z-00000003')).toEqual([{ archive: 'host-m-00000001', lastArchivedAt: T + 9 * HOUR }]);
        for (const r of recs.slice(3)) await repo.archived(r); // one before the given id; the newest of each
        expect(await repo.otherArchives('host-m-00000001')).toEqual([
          { archive: 'host-a-00000004', lastArchivedAt: T + 3 * HOUR },
          { archive: 'host-z-00000003', lastArchivedAt: T + 5 * HOUR },
        ]);
        expect(await repo.otherArchives('host-b-00000000')).toHaveLength(3);
        await repo.remove(['c-5']);
        await repo.claim(['c-4'], 'host-m-00000001'); // its files were found here
        expect(await repo.otherArchives('host-m-00000001')).toEqual([{ archive: 'host-z-00000003', lastArchivedAt: T + 4 * HOUR }]);
        await repo.remove(['c-3', 'c-6']);
        expect(await repo.otherArchives('host-m-00000001')).toEqual([]);
      });

      it('remove forgets archived recordings whose files were deleted; their calls stay archived', async () => {
        const recs = ['c-1', 'c-2', 'c-3'].map((id) => archivedRecording(id, { bytes: 100 }));
        await writeCalls(recs.map((r, i) => withRecording(r.callId, T + i * MINUTE)));
        for (const r of recs) await repo.archived(r);
        await repo.remove(['c-1', 'c-3']);
        await repo.remove([]);
        expect((await repo.archivedAll()).map((r) => r.callId)).toEqual(['c-2']);
        expect(await repo.totals()).toEqual({ files: 1, bytes: 100 });
        expect(await recordingOf('c-1')).toBe('archived');
        expect(await dueIds(T + DAY)).toEqual([]);
      });

      it('pruneOrphans forgets retry and loss records of calls pruned from the calls table (in batches), never archived recordings', async () => {
        const old = Array.from({ length: 520 }, (_, i) => withRecording(`old-${i}`, T + i * 1_000));
        const kept = withRecording('kept', T + 2 * DAY);
        await writeCalls([...old, kept], T + 3 * DAY);
        for (const c of old.slice(0, 510)) await repo.failed(c.callId, c.serial, T + DAY, 'http_503');
        for (const c of old.slice(510, 515)) await repo.lost(c.callId, c.serial, T + DAY);
        const archived = archivedRecording('old-519');
        await repo.archived(archived);
        await repo.failed('kept', 'BX-1', T + 3 * DAY, 'http_503');
        await calls.prune(T + DAY, 0); // retention drops the old calls
        expect(await repo.pruneOrphans()).toBe(515);
        expect(await repo.pruneOrphans()).toBe(0);
        expect(await repo.lostSince(0)).toEqual(new Map());
        expect(await repo.archivedAll()).toEqual([archived]);
        expect(await repo.due(T + 3 * DAY, 10)).toEqual([expect.objectContaining({ call: expect.objectContaining({ callId: 'kept' }), attempts: 1 })]);
      });
    });
  });
}
