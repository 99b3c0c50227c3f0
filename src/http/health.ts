/**
 * `/healthz` as a pure function of what is known about the poll cycles and `now`: healthy while the
 * last successful cycle ended less than `maxCycleAgeMs` ago, unhealthy with a reason otherwise.
 */
import { isoTime as iso } from '../time-format.js';
import { formatDuration } from '../duration.js';
import type { CycleRecord } from '../domain/store.js';
import { DEFAULT_ACCOUNT } from '../box-id.js';
import { isGatewayDown } from '../alerts/gateway.js';

export interface HealthInput {
  now: number;
  maxCycleAgeMs: number;
  /** The latest cycle recorded (ok or failed), if any. */
  lastCycle: CycleRecord | undefined;
  /** End of the last successful cycle (ms), null if unknown. */
  lastSuccessAt: number | null;
  /** Start of the first failed cycle after the last success, when known. */
  failingSince: number | null;
  /** The latest cycle of each account (listed in the body when there are several). */
  accounts?: readonly CycleRecord[];
}

/** One account's latest cycle, in `/healthz` when there are several accounts. */
export interface AccountHealthJson {
  account: string;
  lastCycle: CycleJson;
}

export interface CycleJson {
  startedAt: string;
  durationMs: number;
  outcome: string;
  errorCode: string | null;
  requests: number;
  boxes: number;
  detailsFetched: number;
}

export type HealthBody = (
  | { status: 'ok'; lastSuccessAt: string; lastCycle: CycleJson | null }
  | { status: 'unhealthy'; reason: string; lastSuccessAt: string | null; lastCycle: CycleJson | null }
) & { accounts?: AccountHealthJson[] };


/** A cycle record for JSON: ISO start time, the error code but not the error text. */
export function cycleJson(c: CycleRecord): CycleJson {
  return {
    startedAt: iso(c.startedAt),
    durationMs: c.durationMs,
    outcome: c.outcome,
    errorCode: c.errorCode,
    requests: c.requests,
    boxes: c.boxes,
    detailsFetched: c.detailsFetched,
  };
}

export function evaluateHealth(input: HealthInput): { healthy: boolean; body: HealthBody } {
  const { now, maxCycleAgeMs, lastCycle, lastSuccessAt } = input;
  const last = lastCycle ? cycleJson(lastCycle) : null;
  const success = lastSuccessAt === null ? null : iso(lastSuccessAt);
  // With several accounts, each one's latest cycle: one account's outage shows here (and alerts)
  // without making the daemon unhealthy while another account polls.
  const several = (input.accounts?.length ?? 0) > 1 ? { accounts: (input.accounts ?? []).map((c) => ({ account: c.account ?? DEFAULT_ACCOUNT, lastCycle: cycleJson(c) })) } : {};
  if (lastSuccessAt !== null && now - lastSuccessAt <= maxCycleAgeMs) {
    return { healthy: true, body: { status: 'ok', lastSuccessAt: iso(lastSuccessAt), lastCycle: last, ...several } };
  }
  return { healthy: false, body: { status: 'unhealthy', reason: reason(input), lastSuccessAt: success, lastCycle: last, ...several } };
}

function reason({ now, maxCycleAgeMs, lastCycle, lastSuccessAt, failingSince }: HealthInput): string {
  if (lastCycle === undefined) return 'no poll cycle has run yet';
  if (isGatewayDown(lastCycle)) {
    const code = lastCycle.errorCode ?? 'unknown error';
    const last = `last failure: ${code} at ${iso(lastCycle.startedAt)}`;
    if (failingSince !== null) return `gateway polls failing since ${iso(failingSince)} (${last})`;
    if (lastSuccessAt !== null) return `no successful poll cycle since ${iso(lastSuccessAt)} (${last})`;
    return `no successful poll cycle since the daemon started (${last})`;
  }
  const age = lastSuccessAt === null ? now - lastCycle.startedAt : now - lastSuccessAt;
  return `last successful poll cycle ended ${formatDuration(age)} ago, more than the allowed ${formatDuration(maxCycleAgeMs)}`;
}
