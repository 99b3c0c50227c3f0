/** The CLI's reading of `--since 24h` or `--from TIME --to TIME` (src/time.ts), and relative times. */
import { UsageError } from '../errors.js';
import { readRange } from '../time.js';

export interface RangeOptions {
  since?: string;
  from?: string;
  to?: string;
}

/** [from, to) in ms; a bad argument is a UsageError (exit 2) naming the option. */
export function parseRange(options: RangeOptions, now: number, defaultSince: string): { from: number; to: number } {
  const r = readRange(options, now, defaultSince, (p) => `--${p}`);
  if (!r.ok) throw new UsageError(r.message);
  return { from: r.from, to: r.to };
}

export { relativeTime } from '../time-format.js';
