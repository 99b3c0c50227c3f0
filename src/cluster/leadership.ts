/**
 * Which accounts this process works for: every configured one when it runs alone, the ones it
 * leads when it is a replica (`cluster:`). Stages ask this instead of whether there is a cluster.
 */
import type { Fence } from '../domain/leases.js';
import type { Replica } from './replica.js';

export interface Leadership {
  /** Whether this process works for the account now. */
  holds(account: string): boolean;
  /** An account worked here: its writes' fence (undefined alone: unfenced); null when another replica leads it. */
  claim(account: string): { fence: Fence | undefined } | null;
  /** The fences to release grouped alerts under: one unfenced pass alone, one per led account as a replica. */
  fences(): readonly (Fence | undefined)[];
  /** A fenced write was refused: the lease changed hands (nothing to do alone). */
  lost(fence: Fence): void;
}

/** A process that runs alone: every account, unfenced. */
export const ALONE: Leadership = {
  holds: () => true,
  claim: () => ({ fence: undefined }),
  fences: () => [undefined],
  lost: () => {},
};

export function leadershipOf(replica: Replica | null): Leadership {
  if (replica === null) return ALONE;
  return {
    holds: (account) => replica.holds(account),
    claim: (account) => {
      const fence = replica.fence(account);
      return fence === undefined ? null : { fence };
    },
    fences: () => replica.fences(),
    lost: (fence) => replica.lost(fence),
  };
}
