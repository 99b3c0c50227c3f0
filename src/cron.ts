/**
 * Cron expressions as the schedules read them (poll, calls, test calls, archive): 5 fields, or 6
 * with seconds first, month and day names in full or short, in an IANA time zone (default UTC).
 * A helper of its own so that the configuration validates schedules exactly as they will run.
 */
import { Cron } from 'croner';

/** The time zone schedules are read in unless configured (`poll.timezone`). */
export const DEFAULT_TIMEZONE = 'UTC';

/**
 * The expression as croner reads it, without a job of its own: in UTC as a fixed offset (no
 * `Intl`), elsewhere in the IANA zone. Day of month and day of week must both match
 * (`0 0 0 13 * fri`: Fridays the 13th), not either one as in classic cron.
 */
export function parseSchedule(expression: string, timezone: string): Cron {
  const zone = timezone === 'UTC' || timezone === 'Etc/UTC' ? { utcOffset: 0 } : { timezone };
  return new Cron(expression.replace(FULL_NAME, (name) => name.slice(0, 3)), { ...zone, mode: '5-or-6-parts', domAndDow: true, paused: true });
}

/** Month and day names written in full (`monday`, `january`), which croner reads as `mon`, `jan` only. */
const FULL_NAME = /\b(?:january|february|march|april|may|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b/gi;

/** True for an expression the schedules accept: 5 fields, or 6 with seconds first (config validation). */
export function isCronExpression(expression: string): boolean {
  try {
    parseSchedule(expression, DEFAULT_TIMEZONE);
    return true;
  } catch {
    return false;
  }
}
