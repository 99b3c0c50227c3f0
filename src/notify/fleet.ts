/** The fleet's counts as templates see them (`fleet.*`): read at start, then kept by each cycle. */
import { countFiring } from '../alerts/firing.js';
import type { AlertState } from '../alerts/types.js';
import type { BoxState } from '../domain/store.js';
import type { FleetStats } from './templates.js';

export class FleetCounts {
  private value: FleetStats | undefined;

  /** The counts as of the last cycle (undefined before the start read them). */
  current(): FleetStats | undefined {
    return this.value;
  }

  set(boxes: readonly BoxState[], states: Iterable<AlertState>): void {
    this.value = fleetStats(boxes, states);
  }

  /** The cycle observer that keeps them (src/poller/account-loop.ts). */
  readonly afterCycle = async (s: { view(): Promise<{ boxes: BoxState[]; states: ReadonlyMap<string, AlertState> }> }): Promise<void> => {
    const view = await s.view();
    this.set(view.boxes, view.states.values());
  };
}

/** The fleet as templates see it: boxes present, connected and not, firing alerts. */
export function fleetStats(boxes: readonly BoxState[], states: Iterable<AlertState>): FleetStats {
  let present = 0;
  let connected = 0;
  for (const b of boxes) {
    if (b.missingSince !== null) continue;
    present += 1;
    if (b.connected === true) connected += 1;
  }
  return { boxes: present, connected, disconnected: present - connected, firingAlerts: countFiring(states) };
}
