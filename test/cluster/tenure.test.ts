import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTenure } from '../../src/cluster/tenure.js';
import type { DaemonHold } from '../../src/domain/daemon-hold.js';
import type { Replica } from '../../src/cluster/replica.js';
import { silentLogger } from '../../src/log.js';
import { StoreError } from '../../src/store/errors.js';

afterEach(() => {
  vi.useRealTimers();
});

function hold(beat: () => void = () => {}) {
  const calls: string[] = [];
  const h: DaemonHold = {
    take: () => (calls.push('take'), { holder: { pid: 1, host: 'here', since: 0 }, tookOver: null }),
    beat: () => (calls.push('beat'), beat()),
    release: () => void calls.push('release'),
  };
  return { calls, hold: h };
}

describe('tenure alone: the database hold', () => {
  it('beats every interval; a hold taken over by another daemon stops the beats and tells the app once', async () => {
    vi.useFakeTimers();
    let takenOver = false;
    const h = hold(() => {
      if (takenOver) throw new StoreError('store_in_use', 'another daemon took the database over');
    });
    const lost: StoreError[] = [];
    const t = createTenure({ replica: null, hold: h.hold, beatEveryMs: 5_000, db: 'test.db', logger: silentLogger, identifyArchive: () => {}, onLost: (err) => void lost.push(err) });
    await t.begin();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.calls).toEqual(['take', 'beat', 'beat']);
    takenOver = true;
    await vi.advanceTimersByTimeAsync(15_000);
    expect(h.calls).toEqual(['take', 'beat', 'beat', 'beat']);
    expect(lost.map((e) => e.code)).toEqual(['store_in_use']);
  });

  it('a busy database only delays a beat; stopping ends the beats, then the hold is given up', async () => {
    vi.useFakeTimers();
    const h = hold(() => {
      throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    });
    const lost: unknown[] = [];
    const t = createTenure({ replica: null, hold: h.hold, beatEveryMs: 5_000, db: 'test.db', logger: silentLogger, identifyArchive: () => {}, onLost: (err) => void lost.push(err) });
    await t.begin();
    await vi.advanceTimersByTimeAsync(10_000);
    t.halt();
    await vi.advanceTimersByTimeAsync(10_000);
    await t.release();
    expect(h.calls).toEqual(['take', 'beat', 'beat', 'release']);
    expect(lost).toEqual([]);
  });
});

describe('tenure as a replica: the leases', () => {
  it('takes no hold: starts the replica and announces its archive, releases its leases when the work stopped', async () => {
    const h = hold();
    const seen: string[] = [];
    const replica = { start: () => void seen.push('replica start'), stop: async () => void seen.push('replica stop') } as unknown as Replica;
    const t = createTenure({ replica, hold: h.hold, beatEveryMs: 5_000, db: 'test.db', logger: silentLogger, identifyArchive: () => void seen.push('archive id'), onLost: () => {} });
    await t.begin();
    await t.leave();
    expect(seen).toEqual(['archive id', 'replica start', 'replica stop']);
    expect(h.calls).toEqual([]);
  });
});
