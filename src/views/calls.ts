/**
 * The call views: one call as programs see it (`/api/calls`, `/api/boxes/:serial/calls`), the
 * failure share per time bucket (the dashboard's box page), and the figures of
 * `boxwatch calls stats` and the status table's failure-rate column. Read side only. The
 * destination is the masked form unless numbers are stored; transcripts and variables appear
 * only when stored (calls.store_transcripts). In JSON every time is ISO 8601 UTC.
 */
import type { CallRecord, CallStats, FailureCount } from '../domain/calls.js';
import { isoOrNull, isoTime } from '../time-format.js';
import { splitBoxKey } from '../box-id.js';

export interface CallJson {
  callId: string;
  box: string;
  agentId: number;
  status: string;
  direction: string;
  startedAt: string;
  endedAt: string | null;
  durationSec: number | null;
  /** `+1415•••0123`. */
  to: string;
  /** Only when calls.store_numbers. */
  toNumber?: string;
  recording: string | null;
  /** Only when calls.store_transcripts. */
  transcript?: string;
  variables?: Record<string, string>;
  /** Only for a test call: the test_calls entry that placed it. */
  testCall?: string;
}

export function callJson(c: CallRecord & { testCall?: string | null }): CallJson {
  return {
    callId: c.callId,
    box: c.serial,
    agentId: c.agentId,
    status: c.status,
    direction: c.direction,
    startedAt: isoTime(c.startedAt),
    endedAt: isoOrNull(c.endedAt),
    durationSec: c.durationSec,
    to: c.toMasked,
    ...(c.toNumber !== null && { toNumber: c.toNumber }),
    recording: c.recording,
    ...(c.transcript !== null && { transcript: c.transcript }),
    ...(c.variables !== null && { variables: c.variables }),
    ...(typeof c.testCall === 'string' && { testCall: c.testCall }),
  };
}

/** Failed share in percent (one decimal) of final calls; null without any. */
export function failurePercent(c: Pick<FailureCount, 'calls' | 'failed'> | undefined): number | null {
  if (c === undefined || c.calls === 0) return null;
  return Math.round((1000 * c.failed) / c.calls) / 10;
}

/** `12.5% of 40` (the status column), `-` without final calls. */
export function failureCell(c: FailureCount | undefined): string {
  const p = failurePercent(c);
  return p === null || c === undefined ? '-' : `${p}% of ${c.calls}`;
}

/** One row of `calls stats` as JSON. */
export interface CallStatsJson {
  box?: string;
  /** With `agent`: the account whose agent it is (agent ids are each vendor account's own). */
  account?: string;
  agent?: number;
  placed: number;
  /** Of `placed`, the test calls (`test_calls:`). */
  testCalls: number;
  completed: number;
  failed: number;
  /** Failed share of the final calls, percent; null without any. */
  failedPercent: number | null;
  stuck: number;
  medianDurationSec: number | null;
  recordingsArchived: number;
  recordingsLost: number;
}

export function callStatsJson(s: CallStats, by: 'box' | 'agent'): CallStatsJson {
  return {
    ...(by === 'box' ? { box: s.key } : { account: splitBoxKey(s.key).account, agent: Number(splitBoxKey(s.key).serial) }),
    placed: s.placed,
    testCalls: s.test,
    completed: s.completed,
    failed: s.failed,
    failedPercent: failurePercent({ calls: s.completed + s.failed, failed: s.failed }),
    stuck: s.stuck,
    medianDurationSec: s.medianDurationSec,
    recordingsArchived: s.archived,
    recordingsLost: s.lost,
  };
}

/** The size of the failure-share buckets of a range: about 48 of them, whole multiples of 5 minutes. */
export function bucketMsFor(rangeMs: number): number {
  const step = 5 * 60_000;
  return Math.max(step, Math.ceil(rangeMs / 48 / step) * step);
}
