/** The daemon's signs of life: `polling ok` every 5 minutes, one line per gateway health change. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createHeartbeat } from '../../src/poller/heartbeat.js';
import type { CycleRecord } from '../../src/domain/store.js';

function capture(): { lines: () => { level: number; msg: string }[]; heartbeat: ReturnType<typeof createHeartbeat> } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      out.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ level: 'info', destination: stream });
  return {
    heartbeat: createHeartbeat(logger),
    lines: () => out.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string }),
  };
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
const ok = (at: number): CycleRecord => ({ startedAt: at, durationMs: 42, requests: 2, outcome: 'ok', errorCode: null, error: null, boxes: 50, detailsFetched: 3 });
const failed = (at: number): CycleRecord => ({ ...ok(at), outcome: 'failed', errorCode: 'unavailable', error: 'down', boxes: 0 });

describe('heartbeat', () => {
  it('a polling ok line after the first cycle, then every 5 minutes while nothing changes', () => {
    const { heartbeat, lines } = capture();
    for (let s = 0; s <= 11 * 60; s += 30) heartbeat.afterCycle(ok(T0 + s * 1000), 0);
    expect(lines().map((l) => l.msg)).toEqual(Array(3).fill('polling ok: 50 boxes, 0 firing, last cycle 42 ms'));
  });

  it('one line when the gateway starts failing, one when it answers again', () => {
    const { heartbeat, lines } = capture();
    heartbeat.afterCycle(ok(T0), 2);
    for (let i = 1; i <= 4; i++) heartbeat.afterCycle(failed(T0 + i * 30_000), 2);
    heartbeat.afterCycle(ok(T0 + 150_000), 2);
    heartbeat.afterCycle(ok(T0 + 180_000), 2);
    expect(lines().map((l) => [l.level, l.msg])).toEqual([
      [30, 'polling ok: 50 boxes, 2 firing, last cycle 42 ms'],
      [40, 'gateway failing (unavailable): polls fail until it answers again'],
      [30, 'gateway answering again after 4 failed cycles'],
      [30, 'polling ok: 50 boxes, 2 firing, last cycle 42 ms'],
    ]);
  });
});
