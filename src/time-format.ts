/**
 * Writing times for people and programs, the one way each: ISO 8601 UTC (`isoTime`) for every
 * JSON answer, log field, payload and rule summary, one readable UTC form (`formatTime`) for tables
 * and messages, and "5m ago" for relative times. src/time.ts reads time arguments; src/duration.ts
 * formats durations.
 */
import { formatDuration } from './duration.js';

/**
 * ISO 8601 in UTC with milliseconds (`2026-03-01T10:00:00.000Z`, the RFC 3339 form Alertmanager
 * writes too). Never throws: a value no Date can hold (a damaged row) renders as `invalid time`
 * instead of breaking the whole read.
 */
export function isoTime(t: number): string {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? 'invalid time' : d.toISOString();
}

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
