/**
 * The JSON sidecar written beside each archived recording: the call record as the API shows it
 * (src/views/calls.ts), and the recording's file, checksum, size and type. The destination number
 * appears in clear only with `calls.store_numbers`, transcript and variables only with
 * `calls.store_transcripts`, whatever the database row holds (the configuration of today decides).
 */
import type { CallRecord } from '../domain/calls.js';
import { isoTime } from '../time-format.js';
import { callJson, type CallJson } from '../views/calls.js';

export interface Sidecar {
  call: CallJson;
  recording: { file: string; sha256: string; bytes: number; contentType: string | null; archivedAt: string };
}

export function sidecarOf(
  call: CallRecord,
  recording: { file: string; sha256: string; bytes: number; contentType: string | undefined; archivedAt: number },
  privacy: { storeNumbers: boolean; storeTranscripts: boolean },
): Sidecar {
  const shown: CallRecord = {
    ...call,
    recording: 'archived',
    toNumber: privacy.storeNumbers ? call.toNumber : null,
    transcript: privacy.storeTranscripts ? call.transcript : null,
    variables: privacy.storeTranscripts ? call.variables : null,
  };
  return {
    call: callJson(shown),
    recording: { file: recording.file, sha256: recording.sha256, bytes: recording.bytes, contentType: recording.contentType ?? null, archivedAt: isoTime(recording.archivedAt) },
  };
}
