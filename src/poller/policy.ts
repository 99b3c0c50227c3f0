/**
 * Which boxes get a device-details request this cycle. Pure.
 *
 * Always: boxes seen for the first time (or never detailed), boxes whose summary changed in a way
 * details must confirm (connected, firmware), and boxes whose details are older than
 * `details_every`. Then, to keep the load even instead of refreshing the whole fleet on one tick
 * every `details_every`, the oldest details are topped up to a per-tick budget of
 * ceil(fleet × tick interval / details_every). After the first cycle this staggers refreshes so
 * each tick fetches about the same number of boxes, and no box's details ever get older than
 * `details_every` plus one tick.
 */
import type { DeviceSummary } from '../gateway/schemas.js';
import type { BoxState } from '../domain/store.js';

export interface DetailsPolicy {
  detailsEveryMs: number;
  /** Time between ticks of the schedule. */
  tickIntervalMs: number;
}

export function selectForDetails(
  summaries: readonly DeviceSummary[],
  known: ReadonlyMap<string, BoxState>,
  now: number,
  policy: DetailsPolicy,
): string[] {
  const chosen = new Set<string>();
  const candidates: { serial: string; detailsAt: number }[] = [];
  for (const s of summaries) {
    const box = known.get(s.serial_no);
    // One test, not one branch per reason: a rare branch taken late would make V8 recompile this loop.
    if (box === undefined || box.detailsAt === null || detailsDue(s, box, box.detailsAt, now, policy)) chosen.add(s.serial_no);
    else candidates.push({ serial: s.serial_no, detailsAt: box.detailsAt });
  }
  const budget = Math.ceil((summaries.length * policy.tickIntervalMs) / Math.max(1, policy.detailsEveryMs));
  if (chosen.size < budget) {
    candidates.sort(oldestFirst);
    for (const c of candidates.slice(0, budget - chosen.size)) chosen.add(c.serial);
  }
  return [...chosen];
}

/** Oldest details first, then by serial. (A module function: V8 keeps its optimized code across cycles.) */
function oldestFirst(a: { serial: string; detailsAt: number }, b: { serial: string; detailsAt: number }): number {
  return a.detailsAt - b.detailsAt || (a.serial < b.serial ? -1 : 1);
}

/** A known box's details are due now: it connected or disconnected, its firmware changed, or its details (of `detailsAt`) are `detailsEvery` old. */
function detailsDue(s: DeviceSummary, box: BoxState, detailsAt: number, now: number, policy: DetailsPolicy): boolean {
  return box.connected !== s.connected || box.firmware !== s.firmware_version || now - detailsAt >= policy.detailsEveryMs;
}
