import { describe, expect, it } from 'vitest';
import { LeaseLostError, type Fence } from '../../src/domain/leases.js';
import { silentLogger } from '../../src/log.js';
import { createGrouping } from '../../src/notify/grouping.js';
import { FakeClock } from '../helpers/fake-clock.js';

const A: Fence = { account: 'a', holder: 'r1', token: 1 };
const B: Fence = { account: 'b', holder: 'r1', token: 4 };

/** A group queue with nothing pending, refusing the fences in `lostFences` as a store refuses a stale token. */
function queue(lostFences: Fence[] = []) {
  const asked: (string | undefined)[] = [];
  return {
    asked,
    queue: {
      pending: (_max: number, fence?: Fence) => {
        asked.push(fence?.account);
        if (fence !== undefined && lostFences.includes(fence)) throw new LeaseLostError(fence);
        return [];
      },
      release: () => {},
    },
  };
}

describe('grouping', () => {
  it('alone: one unfenced pass', async () => {
    const q = queue();
    const g = createGrouping({ queue: q.queue, groupWaitMs: 30_000, configured: new Set(), leadership: { fences: () => [undefined], lost: () => {} }, wake: () => {}, clock: new FakeClock(), logger: silentLogger });
    await g.run();
    expect(q.asked).toEqual([undefined]);
  });

  it('a replica: one pass per led account; a lease lost on one is reported and the others still pass', async () => {
    const q = queue([A]);
    const lost: Fence[] = [];
    const g = createGrouping({ queue: q.queue, groupWaitMs: 30_000, configured: new Set(), leadership: { fences: () => [A, B], lost: (f) => void lost.push(f) }, wake: () => {}, clock: new FakeClock(), logger: silentLogger });
    await g.run();
    expect(q.asked).toEqual(['a', 'b']);
    expect(lost).toEqual([A]);
  });
});
