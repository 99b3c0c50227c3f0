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

export { relativeTime } from '../time-format.js';
