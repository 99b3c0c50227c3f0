/**
 * The usual observers of a stored cycle (src/poller/account-loop.ts), each a small function over
 * the port it feeds. src/app.ts lists them in the order they run.
 */
import { countFiring } from '../alerts/firing.js';
import type { CycleRecord } from '../domain/store.js';
import { isoTime } from '../time-format.js';
import type { AccountLoopOptions, CommittedPart, CycleObserver, FleetView, StoredCycle } from './account-loop.js';

/** The cycle's record into the cycle metrics. */
export function recordCycle(metrics: { observeCycle(record: CycleRecord): void }): CycleObserver {
  return (s) => metrics.observeCycle(s.cycle.cycle);
}

/** The fleet snapshot as the account loop feeds it (/metrics and the heavy API answers are rendered from it). */
export function loopFleet(snapshot: {
  publish(startedAt: number, accounts: readonly string[], boxes: CommittedPart['boxes'], states: CommittedPart['states']): void;
  view(): Promise<FleetView>;
}): AccountLoopOptions['fleet'] {
  return { publish: (c) => snapshot.publish(c.startedAt, c.accounts, c.boxes, c.states), view: () => snapshot.view() };
}

/** The account's heartbeat in the log (src/poller/heartbeat.ts), with the fleet's firing alerts. */
export const beatHeart: CycleObserver = async (s) => {
  s.run.heartbeat.afterCycle(s.cycle.cycle, countFiring((await s.view()).states.values()));
};

/** The box gauges prepared for /metrics, when an HTTP server serves them. */
export function prepareMetrics(metrics: { prepare(fleet: FleetView['boxes']): Promise<void> }, served: () => boolean): CycleObserver {
  return async (s) => {
    if (served()) await metrics.prepare((await s.view()).boxes);
  };
}

/** A cycle that queued notifications starts grouping (their group_wait timer) at once. */
export function groupWhenQueued(group: () => Promise<void>): CycleObserver {
  return (s) => {
    if (s.cycle.alerts !== null && s.cycle.alerts.queued > 0) void group();
  };
}

/** The dashboard's live event stream: one event after every cycle. */
export interface LiveAnnouncer {
  afterCycle: CycleObserver;
  /**
   * Replicas: at each tick of an account another replica leads, a change of the fleet stored by
   * the others since the last announcement (a cycle of any account, whatever its start) is
   * announced too, so that this replica's open pages (a standby's among them) stay live.
   */
  others(): Promise<void>;
}

export function liveAnnouncer(o: {
  events: { publish(event: { startedAt: string; outcome: 'ok' | 'failed'; boxes: number }): void };
  /** The fleet snapshot's version (after reading what other processes stored). */
  version: () => Promise<number>;
  lastCycle: () => Promise<CycleRecord | undefined> | CycleRecord | undefined;
}): LiveAnnouncer {
  /** The version of the fleet snapshot last announced. */
  let announcedVersion = 0;
  const announce = (c: { startedAt: number; outcome: 'ok' | 'failed'; boxes: number }, version: number): void => {
    announcedVersion = version;
    o.events.publish({ startedAt: isoTime(c.startedAt), outcome: c.outcome, boxes: c.boxes });
  };
  return {
    afterCycle: async (s: StoredCycle) => announce(s.cycle.cycle, (await s.view()).version),
    async others() {
      try {
        const version = await o.version();
        if (version === announcedVersion) return;
        const last = await o.lastCycle();
        if (last !== undefined) announce(last, version);
      } catch {
        // the database is out of reach: the pages catch up with the next cycle
      }
    },
  };
}
