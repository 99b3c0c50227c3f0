/**
 * The read-only JSON API: box state, metric history and alerts, with ISO 8601 times. Query
 * parameters are checked strictly; a bad one is a 400 that names it.
 */
import { formatDuration, readDuration } from '../duration.js';
import { RAW_MAX_RANGE_MS } from '../store/index.js';
import { isoTime as iso, readRange } from '../time.js';
import { METRICS, type BoxState, type HistoryResult, type Metric, type Store } from '../store/types.js';
import { badRequest, notFound } from './errors.js';

/** What `/api/alerts` reads; the alerts module (or the app) provides it. */
export interface AlertsReader {
  /** Alerts, newest first; `activeOnly` keeps pending and firing ones; `since` (ms) drops older ones. */
  list(query: { activeOnly: boolean; since: number | undefined }): unknown[] | Promise<unknown[]>;
}

const isoOrNull = (t: number | null): string | null => (t === null ? null : iso(t));

export interface BoxJson {
  serial: string;
  id: number;
  name: string;
  connected: boolean;
  battery: number | null;
  signal: number | null;
  firmware: string;
  lastSeen: string;
  registeredAt: string | null;
  location: string | null;
  ip: string | null;
  detailsAt: string | null;
  firstSeen: string;
  lastPolled: string;
  missingSince: string | null;
}

export function boxJson(b: BoxState): BoxJson {
  return {
    serial: b.serial,
    id: b.id,
    name: b.name,
    connected: b.connected,
    battery: b.battery,
    signal: b.signal,
    firmware: b.firmware,
    lastSeen: iso(b.lastSeen),
    registeredAt: isoOrNull(b.registeredAt),
    location: b.location,
    ip: b.ip,
    detailsAt: isoOrNull(b.detailsAt),
    firstSeen: iso(b.firstSeen),
    lastPolled: iso(b.lastPolled),
    missingSince: isoOrNull(b.missingSince),
  };
}

/** Reads query parameters once each: an unknown or repeated parameter is a 400. */
function queryParams(query: URLSearchParams, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of query) {
    if (!allowed.includes(key)) throw badRequest(key, `unknown parameter "${key}" (allowed: ${allowed.join(', ')})`);
    if (out.has(key)) throw badRequest(key, `parameter "${key}" given more than once`);
    out.set(key, value);
  }
  return out;
}

function parseSince(text: string): number {
  const r = readDuration(text, { min: 1 });
  if (!r.ok) throw badRequest('since', `since: ${r.message}`);
  return r.ms;
}

/** `since=24h` or `from=TIME[&to=TIME]` into [from, to) (src/time.ts); the default is the last 24 hours. */
export function parseRange(params: Map<string, string>, now: number): { from: number; to: number } {
  const r = readRange({ since: params.get('since'), from: params.get('from'), to: params.get('to') }, now, '24h');
  if (!r.ok) throw badRequest(r.param, r.message);
  return { from: r.from, to: r.to };
}

export function boxesJson(store: Store): { boxes: BoxJson[] } {
  return { boxes: store.boxes().map(boxJson) };
}

export function boxDetailJson(store: Store, serial: string): BoxJson {
  const box = store.box(serial);
  if (!box) throw notFound(`unknown box serial "${serial}"`);
  return boxJson(box);
}

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

/** `/api/boxes/:serial/history?metric=battery&since=24h` (or from/to; kind=raw|rollup forces one form). */
export function historyJson(store: Store, serial: string, query: URLSearchParams, now: number): HistoryJson {
  const params = queryParams(query, ['metric', 'since', 'from', 'to', 'kind']);
  const metric = params.get('metric') ?? 'battery';
  if (!METRICS.includes(metric as Metric)) throw badRequest('metric', `metric: unknown metric "${metric}" (use ${METRICS.join(', ')})`);
  const kind = params.get('kind');
  if (kind !== undefined && kind !== 'raw' && kind !== 'rollup') throw badRequest('kind', `kind: must be raw or rollup, not "${kind}"`);
  const { from, to } = parseRange(params, now);
  if ((kind === 'raw' || metric === 'firmware') && to - from > RAW_MAX_RANGE_MS) {
    // Raw history is read hour by hour: a long raw range would hold the event loop for seconds.
    const param = params.has('since') ? 'since' : 'from';
    const instead = metric === 'firmware' ? 'ask for a shorter range' : 'ask for a shorter range or kind=rollup';
    throw badRequest(param, `${param}: raw history is limited to ${formatDuration(RAW_MAX_RANGE_MS)} per request; ${instead}`);
  }
  const box = store.box(serial);
  if (!box) throw notFound(`unknown box serial "${serial}"`);
  const h: HistoryResult = store.history(serial, metric as Metric, from, to, kind === undefined ? undefined : { kind });
  const head = { serial, name: box.name, metric: h.metric, from: iso(h.from), to: iso(h.to) };
  if (h.kind === 'raw') {
    return { ...head, kind: 'raw', points: h.points.map((p) => ({ t: iso(p.t), value: p.value, until: p.until === undefined ? null : iso(p.until) })) };
  }
  return {
    ...head,
    kind: 'rollup',
    bucketMs: h.bucketMs,
    points: h.points.map((p) => ({ t: iso(p.t), min: p.min, max: p.max, mean: p.mean, count: p.count })),
  };
}

/** `/api/alerts?active=true&since=24h`. Without a reader the list is empty. */
export async function alertsJson(reader: AlertsReader | undefined, query: URLSearchParams, now: number): Promise<{ alerts: unknown[] }> {
  const params = queryParams(query, ['active', 'since']);
  const active = params.get('active');
  if (active !== undefined && !['true', 'false', '1', '0'].includes(active)) {
    throw badRequest('active', `active: must be true or false, not "${active}"`);
  }
  const sinceText = params.get('since');
  const since = sinceText === undefined ? undefined : now - parseSince(sinceText);
  const activeOnly = active === 'true' || active === '1';
  return { alerts: reader ? await reader.list({ activeOnly, since }) : [] };
}
