/**
 * Points in time as people write them (CLI arguments, API query parameters): one parser for every
 * time argument (src/time-format.ts writes them):
 *
 * - `2026-03-01` (midnight), `2026-03-01T22:00`, `2026-03-01T22:00:30.5`, a space instead of `T`;
 * - an offset `Z`, `+02:00` or `+0200` may follow; **a time without an offset is UTC**, everywhere;
 * - the time must lie in [2000-01-01, 2100-01-01) (TIME_RANGE_TEXT), the same range boxwatch
 *   accepts from the gateway: nothing outside it can be stored, looped over or rendered.
 */
import { readDuration } from './duration.js';

export const MIN_TIME_MS = Date.UTC(2000, 0, 1);
export const MAX_TIME_MS = Date.UTC(2100, 0, 1);
export const TIME_RANGE_TEXT = '2000-01-01 to 2100-01-01 (UTC)';
/** For `--help` texts: how a time argument is written. */
export const TIME_HELP = 'ISO 8601, e.g. 2026-03-01 or 2026-03-01T22:00; UTC unless an offset such as +02:00 is given';

const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

export type TimeReading = { ok: true; ms: number } | { ok: false; message: string };

/** True when `t` is a time boxwatch accepts and can render. */
export function inTimeRange(t: number): boolean {
  return Number.isFinite(t) && t >= MIN_TIME_MS && t < MAX_TIME_MS;
}

/** Parses a time argument (see the module comment); the message of a refusal names the form or the range. */
export function readTime(text: string): TimeReading {
  const s = text.trim();
  const m = s.length <= 40 ? TIME.exec(s) : null;
  if (m === null) return { ok: false, message: `invalid time "${s.slice(0, 40)}" (${TIME_HELP})` };
  const [, y, mo, d, h = '00', mi = '00', sec = '00', frac = '', offset] = m;
  const local = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec), Math.round(Number(`0${frac}`) * 1000));
  const real = new Date(local);
  // Reject what Date.UTC silently rolls over (2026-02-30, 25:00, 12:61).
  if (real.getUTCDate() !== Number(d) || real.getUTCHours() !== Number(h) || real.getUTCMinutes() !== Number(mi) || Number(sec) > 59) {
    return { ok: false, message: `invalid time "${s}" (no such date or time of day)` };
  }
  const ms = local - offsetMs(offset);
  if (!inTimeRange(ms)) return { ok: false, message: `time "${s}" is outside the accepted range ${TIME_RANGE_TEXT}` };
  return { ok: true, ms };
}

function offsetMs(offset: string | undefined): number {
  if (offset === undefined || offset.toUpperCase() === 'Z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
}

export interface RangeInput {
  since?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export type RangeReading = { ok: true; from: number; to: number } | { ok: false; param: 'since' | 'from' | 'to'; message: string };

/**
 * `since` (a duration back from now) or `from` [+ `to`, default now] into a [from, to) range: the
 * one reading of a time range for the CLI (`--since`, `--from`, `--to`) and the API (`since=`,
 * `from=`, `to=`); `name` spells a parameter in messages, which name the parameter at fault.
 * Callers turn a refusal into exit 2 or a 400 naming `param`.
 */
export function readRange(input: RangeInput, now: number, defaultSince: string, name: (param: string) => string = (p) => p): RangeReading {
  if (input.since !== undefined && (input.from !== undefined || input.to !== undefined)) {
    return { ok: false, param: 'since', message: `use either ${name('since')} or ${name('from')}/${name('to')}, not both` };
  }
  if (input.from === undefined && input.to !== undefined) return { ok: false, param: 'from', message: `${name('from')} is required with ${name('to')}` };
  if (input.from !== undefined) {
    const from = readTime(input.from);
    if (!from.ok) return { ok: false, param: 'from', message: `${name('from')}: ${from.message}` };
    const to = input.to === undefined ? { ok: true as const, ms: now } : readTime(input.to);
    if (!to.ok) return { ok: false, param: 'to', message: `${name('to')}: ${to.message}` };
    if (from.ms >= to.ms) return { ok: false, param: 'from', message: `${name('from')} must be before ${name('to')}` };
    return { ok: true, from: from.ms, to: to.ms };
  }
  const since = readDuration(input.since ?? defaultSince, { min: 1 });
  if (!since.ok) return { ok: false, param: 'since', message: `${name('since')}: ${since.message}` };
  return { ok: true, from: Math.max(MIN_TIME_MS, now - since.ms), to: now };
}
