import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import { createHousekeeping, PRUNE_EVERY_MS } from '../../src/store/housekeeping.js';
import { FakeClock } from '../helpers/fake-clock.js';

const DAY = 86_400_000;

/** A store whose prune answers when told to, recording each call's `now`. */
function pruningStore() {
  const calls: number[] = [];
  let finish: (() => void) | null = null;
  return {
    calls,
    finish: () => finish?.(),
    store: {
      prune: (now: number) => {
        calls.push(now);
        return new Promise<number>((resolve) => {
          finish = () => resolve(0);
        });
      },
    },
  };
}

function logLines(): { lines: Record<string, unknown>[]; logger: Logger } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ destination: sink }) };
}

describe('housekeeping: prune cadence', () => {
  it('prunes after the first cycle, then not again before PRUNE_EVERY_MS, nor while a prune runs', async () => {
    const clock = new FakeClock();
    const s = pruningStore();
    const hk = createHousekeeping({ store: s.store, calls: null, testCalls: null, retention: { rawMs: DAY, rollupMs: 30 * DAY }, dbPath: ':memory:', clock, logger: silentLogger, signal: new AbortController().signal });
    hk.pruneWhenDue();
    expect(s.calls).toEqual([clock.now()]);

    clock.advance(PRUNE_EVERY_MS); // due, but the first prune still runs
    hk.pruneWhenDue();
    expect(s.calls).toHaveLength(1);

    s.finish();
    await hk.idle();
    hk.pruneWhenDue(); // the prune it skipped is still due: the next cycle runs it
    expect(s.calls).toHaveLength(2);
    s.finish();
    await hk.idle();

    clock.advance(PRUNE_EVERY_MS - 1);
    hk.pruneWhenDue();
    expect(s.calls).toHaveLength(2);
    clock.advance(1);
    hk.pruneWhenDue();
    expect(s.calls).toEqual([expect.any(Number), expect.any(Number), clock.now()]);
    s.finish();
    await hk.idle();
  });

  it('prunes calls past their retention and test-call attempts older than two days at least', async () => {
    const clock = new FakeClock();
    const pruned: Record<string, number[]> = { calls: [], testCalls: [] };
    const hk = createHousekeeping({
      store: { prune: () => 0 },
      calls: { prune: (callsBefore: number, rollupsBefore: number) => (pruned.calls!.push(callsBefore, rollupsBefore), 3) },
      testCalls: { prune: (before: number) => (pruned.testCalls!.push(before), 2) },
      retention: { rawMs: DAY, rollupMs: 30 * DAY },
      dbPath: ':memory:',
      clock,
      logger: silentLogger,
      signal: new AbortController().signal,
    });
    hk.pruneWhenDue();
    await hk.idle();
    const now = clock.now();
    expect(pruned).toEqual({ calls: [now - DAY, now - 30 * DAY], testCalls: [now - 2 * DAY] });
  });

  it('logs a failed prune and tries again at the next due cycle', async () => {
    const clock = new FakeClock();
    const { lines, logger } = logLines();
    let attempts = 0;
    const hk = createHousekeeping({
      store: {
        prune: () => {
          attempts += 1;
          throw new Error('database is locked');
        },
      },
      calls: null,
      testCalls: null,
      retention: { rawMs: DAY, rollupMs: 30 * DAY },
      dbPath: ':memory:',
      clock,
      logger,
      signal: new AbortController().signal,
    });
    hk.pruneWhenDue();
    await hk.idle();
    expect(lines.map((l) => l.msg)).toEqual(['pruning failed; will try again later']);
    clock.advance(PRUNE_EVERY_MS);
    hk.pruneWhenDue();
    await hk.idle();
    expect(attempts).toBe(2);
  });
});

describe('housekeeping: the -wal file', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('says once that the -wal file was deleted under the daemon, even when an empty one reappears', () => {
    dir = mkdtempSync(join(tmpdir(), 'boxwatch-hk-'));
    const db = join(dir, 'boxwatch.db');
    writeFileSync(db, '');
    writeFileSync(`${db}-wal`, '');
    const { lines, logger } = logLines();
    const hk = createHousekeeping({ store: { prune: () => 0 }, calls: null, testCalls: null, retention: { rawMs: DAY, rollupMs: DAY }, dbPath: db, clock: new FakeClock(), logger, signal: new AbortController().signal });
    hk.checkWal();
    expect(lines).toEqual([]);
    rmSync(`${db}-wal`);
    hk.checkWal();
    writeFileSync(`${db}-wal`, ''); // another process re-created it: not the daemon's file
    hk.checkWal();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, db });
  });
});
