/**
 * Decoded history for readers outside the daemon (`boxwatch sql`, `boxwatch export`): the span of
 * time the database holds, time arguments, and the runs of one metric of one box. Runs come from
 * the store's own raw history (`Store.history` with `kind: 'raw'`), so gaps, the open segment and
 * firmware strings mean here exactly what they mean in `boxwatch history` and the API.
 */
import { UsageError } from '../errors.js';
import { METRICS, type Metric, type RawPoint } from '../store/types.js';
import type { SqliteStore } from '../store/index.js';
import { TIME_HELP, isoTime, readTime } from '../time.js';

/** The output formats of `boxwatch export` (written by export.ts). */
export const EXPORT_FORMATS = ['csv', 'jsonl', 'openmetrics'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A stretch [t, until) of time during which a metric held `value`. */
export interface Run {
  t: number;
  until: number;
  value: number | string | null;
}

/** [from, to) in ms since the epoch. */
export interface Span {
  from: number;
  to: number;
}

/**
 * From the start of the oldest stored sample hour to the end of the last poll's validity (its
 * start plus the store's maxGapMs); null when nothing was sampled yet.
 */
export function storedSpan(store: SqliteStore): Span | null {
  const from = store.historyStart();
  const lastCycle = store.lastCycle();
  if (from === null || lastCycle === undefined) return null;
  return { from, to: lastCycle.startedAt + store.maxGapMs };
}

/** The runs of one metric of one box over [from, to), oldest first; empty when the box is unknown. */
export function boxRuns(store: SqliteStore, serial: string, metric: Metric, span: Span): Run[] {
  if (!(span.to > span.from) || store.box(serial) === undefined) return [];
  const h = store.history(serial, metric, span.from, span.to, { kind: 'raw' });
  return (h.points as RawPoint[]).map((p) => ({ t: p.t, until: p.until ?? p.t, value: p.value }));
}

export function parseMetric(text: unknown, what = 'metric'): Metric {
  if (typeof text === 'string' && (METRICS as readonly string[]).includes(text)) return text as Metric;
  throw new UsageError(`${what}: unknown metric ${JSON.stringify(text)} (use ${METRICS.join(', ')})`);
}

/**
 * A time argument of a SQL function: ms since the epoch (a number), or a time as every boxwatch
 * time argument is written (src/time.ts: `2026-11-01`, `2026-11-01T12:00`, UTC unless an offset
 * is given); `fallback` when omitted.
 */
export function parseTimeArg(value: unknown, what: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'number' || typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') {
    const t = readTime(value);
    if (t.ok) return t.ms;
    throw new UsageError(`${what}: ${t.message}`);
  }
  throw new UsageError(`${what}: expected a time (${TIME_HELP}) or ms since the epoch`);
}

export const iso = isoTime;
