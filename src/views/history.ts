/**
 * One metric's history as JSON, the same for `boxwatch history --format json` and
 * `/api/boxes/:serial/history`: every time ISO 8601 UTC.
 */
import { isoTime } from '../time-format.js';
import type { HistoryResult, Metric } from '../domain/store.js';

export type HistoryJson = {
  serial: string;
  name: string;
  metric: Metric;
  from: string;
  to: string;
} & (
  | { kind: 'raw'; points: { t: string; value: number | string | null; until: string | null }[] }
  | { kind: 'rollup'; bucketMs: number; points: { t: string; min: number | null; max: number | null; mean: number | null; count: number }[] }
);

export function historyResultJson(serial: string, name: string, h: HistoryResult): HistoryJson {
  const head = { serial, name, metric: h.metric, from: isoTime(h.from), to: isoTime(h.to) };
  if (h.kind === 'raw') {
    return { ...head, kind: 'raw', points: h.points.map((p) => ({ t: isoTime(p.t), value: p.value, until: p.until === undefined ? null : isoTime(p.until) })) };
  }
  return {
    ...head,
    kind: 'rollup',
    bucketMs: h.bucketMs,
    points: h.points.map((p) => ({ t: isoTime(p.t), min: p.min, max: p.max, mean: p.mean, count: p.count })),
  };
}
