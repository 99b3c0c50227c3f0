/**
 * The call endpoints of the JSON API (docs/calls.md): `/api/calls` (newest first; `box`,
 * `since`/`from`/`to`, `limit`) and `/api/boxes/:serial/calls` (the box's calls and its failure
 * share per time bucket, which the dashboard's box page charts). Ranges are on the gateway's
 * clock (call times are its own). Without a `calls:` section they answer 404.
 */
import type { CallsRepo } from '../domain/calls.js';
import type { Store } from '../domain/store.js';
import { bucketMsFor, callJson, failurePercent, type CallJson } from '../views/calls.js';
import { isoTime } from '../time-format.js';
import { parseRange, queryParams } from './api.js';
import { badRequest, notFound } from './errors.js';

/** What the call endpoints read; the app provides it when calls are on. */
export interface CallsReader {
  repo: CallsRepo;
  /** Now on the gateway's clock (ours plus the measured skew). */
  now(): number;
}

const MAX_LIMIT = 1000;

function limitOf(params: Map<string, string>, defaultLimit: number): number {
  const text = params.get('limit');
  if (text === undefined) return defaultLimit;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > MAX_LIMIT) throw badRequest('limit', `limit: must be a whole number from 1 to ${MAX_LIMIT}, not "${text}"`);
  return n;
}

function readerOrOff(reader: CallsReader | undefined): CallsReader {
  if (reader === undefined) throw notFound('calls are not read: the configuration has no calls: section');
  return reader;
}

/** `/api/calls`. */
export async function callsJson(reader: CallsReader | undefined, query: URLSearchParams): Promise<{ from: string; to: string; calls: CallJson[] }> {
  const { repo, now } = readerOrOff(reader);
  const params = queryParams(query, ['box', 'since', 'from', 'to', 'limit']);
  const { from, to } = parseRange(params, now());
  const box = params.get('box');
  if (box !== undefined && box.trim() === '') throw badRequest('box', 'box: must not be empty');
  const calls = await repo.list({ ...(box !== undefined && { serial: box }), since: from, until: to, limit: limitOf(params, 100) });
  return { from: isoTime(from), to: isoTime(to), calls: calls.map(callJson) };
}

export interface BoxCallsJson {
  box: string;
  from: string;
  to: string;
  bucketMs: number;
  /** Final calls per bucket (started in it) and the failed share, percent (null: no final calls). */
  buckets: { t: string; calls: number; failed: number; failedPercent: number | null }[];
  calls: CallJson[];
}

/** `/api/boxes/:serial/calls`; the box is looked up like every `/api/boxes/:serial` endpoint (its id exactly: 404 when no box has it). */
export async function boxCallsJson(reader: CallsReader | undefined, store: Pick<Store, 'box'>, serial: string, query: URLSearchParams): Promise<BoxCallsJson> {
  const { repo, now } = readerOrOff(reader);
  const params = queryParams(query, ['since', 'from', 'to', 'limit']);
  if (!(await store.box(serial))) throw notFound(`unknown box serial "${serial}"`);
  const { from, to } = parseRange(params, now());
  const bucketMs = bucketMsFor(to - from);
  const counts = new Map((await repo.failureBuckets(serial, from, to, bucketMs)).map((b) => [b.index, b]));
  const buckets: BoxCallsJson['buckets'] = [];
  for (let i = 0; from + i * bucketMs < to; i++) {
    const c = counts.get(i);
    buckets.push({ t: isoTime(from + i * bucketMs), calls: c?.calls ?? 0, failed: c?.failed ?? 0, failedPercent: failurePercent(c) });
  }
  const calls = await repo.list({ serial, since: from, until: to, limit: limitOf(params, 50) });
  return { box: serial, from: isoTime(from), to: isoTime(to), bucketMs, buckets, calls: calls.map(callJson) };
}
