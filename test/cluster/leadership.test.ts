import { describe, expect, it } from 'vitest';
import { leadershipOf } from '../../src/cluster/leadership.js';
import type { Replica } from '../../src/cluster/replica.js';
import type { Fence } from '../../src/domain/leases.js';

describe('leadership', () => {
  it('alone: every account, unfenced, one release pass', () => {
    const alone = leadershipOf(null);
    expect(alone.holds('acme')).toBe(true);
    expect(alone.claim('acme')).toEqual({ fence: undefined });
    expect(alone.fences()).toEqual([undefined]);
  });

  it('a replica: the accounts it leads, each under its fence; another replica\'s account is not claimed', () => {
    const fence: Fence = { account: 'acme', holder: 'r1', token: 3 };
    const lost: Fence[] = [];
    const replica = {
      holds: (a: string) => a === 'acme',
      fence: (a: string) => (a === 'acme' ? fence : undefined),
      fences: () => [fence],
      lost: (f: Fence) => void lost.push(f),
    } as unknown as Replica;
    const l = leadershipOf(replica);
    expect([l.holds('acme'), l.holds('globex')]).toEqual([true, false]);
    expect(l.claim('acme')).toEqual({ fence });
    expect(l.claim('globex')).toBeNull();
    expect(l.fences()).toEqual([fence]);
    l.lost(fence);
    expect(lost).toEqual([fence]);
  });
});
