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
