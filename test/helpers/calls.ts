/** Calls as call ingestion observes them, for tests that write a CallsRepo directly. */
import type { CallObservation } from '../../src/domain/calls.js';

/**
 * A call as ingestion observes it: by default a completed 60 s outbound call of BX-1, agent 101,
 * started at `over.startedAt` (default 2026-05-04T00:00:00Z), read from the list only (no details).
 */
export function callObservation(callId: string, over: Partial<CallObservation> = {}): CallObservation {
  const startedAt = over.startedAt ?? Date.parse('2026-05-04T00:00:00Z');
  const status = over.status ?? 'completed';
  return {
    callId,
    serial: 'BX-1',
    agentId: 101,
    status,
    direction: 'outbound',
    startedAt,
    endedAt: status === 'initiated' ? null : startedAt + 60_000,
    durationSec: status === 'completed' ? 60 : status === 'failed' ? 0 : null,
    toHash: `hash-of-${callId}`,
    toMasked: '+1415•••0123',
    toNumber: null,
    recording: null,
    transcript: null,
    variables: null,
    detailsRead: false,
    wantsDetails: false,
    ...over,
  };
}
