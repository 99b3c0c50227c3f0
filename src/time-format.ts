/**
 * Writing times, the one way each: ISO 8601 UTC for every JSON answer (CLI and HTTP API), one
 * readable UTC form for tables and messages, and "5m ago" for relative times. Parsing times is
 * elsewhere (the CLI's and API's time arguments); durations are formatted by src/duration.ts.
 */
import { formatDuration } from './duration.js';

/** `2026-03-01T10:00:00.000Z`: every time in a JSON answer. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** iso, or null for null. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : iso(ms);
}

/** `2026-03-01 10:00:00 UTC`: absolute times in tables and messages. */
export function formatTime(ms: number): string {
  return `${iso(ms).slice(0, 19).replace('T', ' ')} UTC`;
}

/** "3m ago", "2h ago", "just now", "in 5s" (clock skew): the largest unit only. */
export function relativeTime(t: number, now: number): string {
  const diff = now - t;
  const abs = Math.abs(diff);
  if (abs < 5_000) return 'just now';
  const text = formatDuration(abs, { parts: 1 });
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}
