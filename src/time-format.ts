/**
 * Writing times for people and programs, the one way each: ISO 8601 UTC for every JSON answer of
 * the CLI and the HTTP API (`isoTime` of src/time.ts, which also reads time arguments), one
 * readable UTC form for tables and messages, and "5m ago" for relative times. Durations are
 * formatted by src/duration.ts.
 */
import { formatDuration } from './duration.js';
import { isoTime } from './time.js';

export { isoTime };

/** isoTime, or null for null: optional times in JSON answers. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : isoTime(ms);
}

/** `2026-03-01 10:00:00 UTC`: absolute times in tables and messages. */
export function formatTime(ms: number): string {
  return `${isoTime(ms).slice(0, 19).replace('T', ' ')} UTC`;
}

/** "3m ago", "2h ago", "just now", "in 5s" (clock skew): the largest unit only. */
export function relativeTime(t: number, now: number): string {
  const diff = now - t;
  const abs = Math.abs(diff);
  if (abs < 5_000) return 'just now';
  const text = formatDuration(abs, { parts: 1 });
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}
