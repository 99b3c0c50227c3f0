/**
 * Durations as people write them in configuration, on the command line and in API queries:
 * `500ms`, `30s`, `5m`, `2h`, `7d`, `1w`, and sums such as `1h30m`. `0` and `0s` are zero.
 *
 * Every duration parsed anywhere is finite and at most MAX_DURATION_MS (3650d): a number written
 * with hundreds of digits is refused, never read as Infinity. Callers with a tighter range (a
 * timer, a query) pass their own `max` to `readDuration`, which names the limit in its message.
 */
const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** The longest duration accepted anywhere: 3650 days (about ten years). */
export const MAX_DURATION_MS = 3650 * 86_400_000;

/** A number has at most 12 digits before and 9 after the point; a duration at most 64 characters. */
const PART = /(\d{1,12}(?:\.\d{1,9})?)(ms|s|m|h|d|w)/gy;
const MAX_TEXT = 64;

export type DurationReading = { ok: true; ms: number } | { ok: false; message: string };

/**
 * Parses a duration within [min, max] ms (default [0, MAX_DURATION_MS]). The message of a refusal
 * says what is wrong and the limit: `duration "40d" is longer than the limit of 30d`.
 */
export function readDuration(text: string, limits: { min?: number; max?: number } = {}): DurationReading {
  const s = text.trim();
  const max = Math.min(limits.max ?? MAX_DURATION_MS, MAX_DURATION_MS);
  const ms = s === '0' ? 0 : parseSum(s);
  if (ms === undefined) return { ok: false, message: `invalid duration "${shorten(s)}" (use e.g. 30s, 5m, 2h, 7d)` };
  if (ms > max) return { ok: false, message: `duration "${shorten(s)}" is longer than the limit of ${formatDuration(max)}` };
  if (limits.min !== undefined && ms < limits.min) {
    return { ok: false, message: limits.min <= 1 ? 'must be longer than 0s' : `duration "${s}" is shorter than the minimum of ${formatDuration(limits.min)}` };
  }
  return { ok: true, ms };
}

function parseSum(s: string): number | undefined {
  if (s === '' || s.length > MAX_TEXT) return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let m = PART.exec(s); m !== null; m = PART.exec(s)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    consumed = PART.lastIndex;
  }
  return consumed === s.length && Number.isFinite(total) ? Math.round(total) : undefined;
}

const shorten = (s: string): string => (s.length > 40 ? `${s.slice(0, 37)}...` : s);

/** Parses a duration to milliseconds; undefined when the text is not a duration or over MAX_DURATION_MS. */
export function tryParseDuration(text: string): number | undefined {
  const r = readDuration(text);
  return r.ok ? r.ms : undefined;
}

export function parseDuration(text: string): number {
  const r = readDuration(text);
  if (!r.ok) throw new Error(r.message);
  return r.ms;
}

/** The units formatDuration writes, largest first, in seconds (built once: rules format a duration per box per cycle). */
const FORMAT_UNITS = [
  { unit: 'd', size: 86_400 },
  { unit: 'h', size: 3_600 },
  { unit: 'm', size: 60 },
  { unit: 's', size: 1 },
] as const;

/**
 * Formats milliseconds compactly, the largest `parts` units (default 2) rounded down:
 * 90_000 -> "1m30s", 93_784_000 -> "1d2h" (parts 2) or "1d2h3m4s" (parts 4), 0 -> "0s",
 * under a second -> "500ms". Every duration boxwatch writes for people goes through here.
 */
export function formatDuration(ms: number, options: { parts?: number } = {}): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let rest = Math.round(ms / 1000);
  let parts = options.parts ?? 2;
  let text = '';
  for (let i = 0; i < FORMAT_UNITS.length && parts > 0; i++) {
    const { unit, size } = FORMAT_UNITS[i] as (typeof FORMAT_UNITS)[number];
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
      parts -= 1;
    }
  }
  return text;
}
