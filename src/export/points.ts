/**
 * Decoded history for readers outside the daemon (`boxwatch sql`, `boxwatch export`): the span of
 * time the database holds, time arguments, and the runs of one metric of one box. Runs come from
 * the store's own raw history (`Store.history` with `kind: 'raw'`), so gaps, the open segment and
 * firmware strings mean here exactly what they mean in `boxwatch history` and the API.
 */
import { UsageError } from '../errors.js';
import { HOUR_MS } from '../store/codec.js';
import { METRICS, type Metric, type RawPoint } from '../domain/store.js';
import type { SqliteStore } from '../store/index.js';
import { TIME_HELP, readTime } from '../time.js';

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

/**
 * How much of a box's history one read decodes: runs are read a week at a time, so that what is
 * held at once (a week's sample rows and runs) does not grow with the range exported.
 */
export const RUNS_WINDOW_MS = 7 * 24 * HOUR_MS;

/**
 * The runs of one metric of one box over [from, to), oldest first, in batches (one per window of
 * `windowMs` read); nothing when the box is unknown. A run that goes on across a window's end comes
 * out whole, as one read of the whole range gives it.
 */
export function* boxRunBatches(store: SqliteStore, serial: string, metric: Metric, span: Span, windowMs = RUNS_WINDOW_MS): Generator<Run[]> {
  if (!(span.to > span.from) || store.box(serial) === undefined) return;
  let last: Run | undefined; // the last run read, held back: it may go on in the next window
  for (let from = span.from; from < span.to; from += windowMs) {
    const h = store.history(serial, metric, from, Math.min(span.to, from + windowMs), { kind: 'raw' });
    const runs = (h.points as RawPoint[]).map((p): Run => ({ t: p.t, until: p.until ?? p.t, value: p.value }));
    const first = runs[0];
    if (last !== undefined) {
      if (first !== undefined && first.t === last.until && Object.is(first.value, last.value)) first.t = last.t;
      else runs.unshift(last);
    }
    last = runs.pop();
    if (runs.length > 0) yield runs;
  }
  if (last !== undefined) yield [last];
}

/** The runs of one metric of one box over [from, to), oldest first (boxRunBatches, one by one). */
export function* boxRuns(store: SqliteStore, serial: string, metric: Metric, span: Span, windowMs = RUNS_WINDOW_MS): Generator<Run> {
  for (const batch of boxRunBatches(store, serial, metric, span, windowMs)) yield* batch;
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

