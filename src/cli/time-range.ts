/** Parses `--since 24h` or `--from ISO --to ISO` into a [from, to) range in ms. */
import { tryParseDuration } from '../duration.js';
import { UsageError } from '../errors.js';

export interface RangeOptions {
  since?: string;
  from?: string;
  to?: string;
}

/** A date (`2026-03-01`, taken as UTC) or a date and time with `Z` or an offset; else NaN. */
export function parseIsoTime(text: string): number {
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/;
  return iso.test(text.trim()) ? Date.parse(text.trim()) : NaN;
}

export function parseRange(options: RangeOptions, now: number, defaultSince: string): { from: number; to: number } {
  if (options.since !== undefined && (options.from !== undefined || options.to !== undefined)) {
    throw new UsageError('use either --since or --from/--to, not both');
  }
  if (options.from !== undefined || options.to !== undefined) {
    const from = options.from === undefined ? NaN : parseIsoTime(options.from);
    const to = options.to === undefined ? now : parseIsoTime(options.to);
    if (Number.isNaN(from)) throw new UsageError(`--from: invalid or missing ISO time "${options.from ?? ''}" (e.g. 2026-03-01 or 2026-03-01T12:00:00Z)`);
    if (Number.isNaN(to)) throw new UsageError(`--to: invalid ISO time "${options.to ?? ''}"`);
    if (from >= to) throw new UsageError('--from must be before --to');
    return { from, to };
  }
  const since = options.since ?? defaultSince;
  const ms = tryParseDuration(since);
  if (ms === undefined || ms <= 0) throw new UsageError(`--since: invalid duration "${since}" (use e.g. 24h, 7d)`);
  return { from: now - ms, to: now };
}

/** "3m ago", "2h ago", "just now", "in 5s" (clock skew). */
export function relativeTime(t: number, now: number): string {
  const diff = now - t;
  const abs = Math.abs(diff);
  if (abs < 5_000) return 'just now';
  const units: [string, number][] = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  const [unit, size] = units.find(([, size]) => abs >= size) ?? ['s', 1_000];
  const n = Math.floor(abs / size);
  return diff >= 0 ? `${n}${unit} ago` : `in ${n}${unit}`;
}
