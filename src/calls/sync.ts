/**
 * One call-sync cycle: reads the gateway's call list newest first and stores what is new or
 * changed, then refreshes calls that are not final yet (and final calls whose details are wanted)
 * through call details. See docs/calls.md.
 *
 * The vendor documents no order and no filters, so the list is read page by page until a call
 * older than the newest call of the last complete read minus a safety window, deduplicated by
 * call_id (pages shift while new calls arrive). A read cut short (request budget, error) is
 * continued in the next cycle from where it stopped; after a gap (boxwatch was down) at most
 * `catch_up` is read back, and a longer gap is reported. Requests per cycle are bounded; 429 and
 * 5xx back off inside the gateway client.
 *
 * Each account reads its own call list with its own client (`account`): the calls it stores carry
 * the account's call keys and box ids (src/box-id.ts), and requests take the gateway's ids back.
 */
import type { Clock } from '../clock.js';
import { BoxwatchError, errorMessage } from '../errors.js';
import { BOX_FROM } from '../gateway/messages.js';
import type { Call, CallSummary } from '../gateway/schemas.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Logger } from '../log.js';
import { mapWithConcurrency } from '../poller/pool.js';
import type { CallObservation, CallRecord, CallsRepo, CallSyncState, RecordingState } from '../domain/calls.js';
import { boxKey, callKey, splitBoxKey } from '../box-id.js';
import { hashNumber, maskNumber } from './privacy.js';
import { isoTime } from '../time-format.js';

export interface CallSyncOptions {
  perPage: number;
  /** List pages plus call details per cycle, at most. */
  maxRequests: number;
  safetyWindowMs: number;
  catchUpMs: number;
  stuckAfterMs: number;
  storeNumbers: boolean;
  storeTranscripts: boolean;
  /** Read the details of every completed call (recording state; the archive needs it). */
  wantRecordings: boolean;
  /** Call-details requests in flight at most. */
  concurrency: number;
}

export interface CallSyncDeps {
  /** The account whose call list is read (through `client`, its gateway). */
  account: string;
  client: GatewayClient;
  repo: CallsRepo;
  clock: Clock;
  logger: Logger;
  options: CallSyncOptions;
  /** Key of the number hash (privacy.ts). */
  hashKey: Buffer;
  signal?: AbortSignal;
}

export interface CallSyncResult {
  outcome: 'ok' | 'failed';
  errorCode: string | null;
  /** List pages read. */
  pages: number;
  /** Call-details requests made (failed ones included). */
  details: number;
  /** Calls new to the store this cycle. */
  added: number;
  /** Calls whose status or details changed. */
  updated: number;
  /** The list was read down to the last complete read (false: to be continued next cycle). */
  complete: boolean;
  /** Set when the gap since the last read was longer than catch_up: calls in it were not read. */
  gapSkipped: { from: number; to: number } | null;
  /** Calls learnt final this cycle (completed or failed), by box: `boxwatch_calls_total`. */
  ended: { serial: string; status: string }[];
  /** Recording URLs read in call details this cycle, for the archive (kept in memory only, never stored). */
  recordings: { callId: string; url: string }[];
}

const FINAL = new Set(['completed', 'failed']);

export async function runCallSync(deps: CallSyncDeps): Promise<CallSyncResult> {
  const { client, repo, clock, logger, options } = deps;
  const now = clock.now();
  const state = await repo.syncState(deps.account);
  let budget = options.maxRequests;
  let pages = 0;
  let errorCode: string | null = null;
  const seen = new Map<string, CallSummary>();

  // Where this read must reach, and whether a gap is left out.
  let gapSkipped: CallSyncResult['gapSkipped'] = null;
  const oldestAllowed = now - options.catchUpMs;
  let floor: number;
  if (state.resume) floor = state.resume.floor;
  else if (state.highWater === null) floor = oldestAllowed;
  else {
    floor = state.highWater - options.safetyWindowMs;
    if (floor < oldestAllowed) {
      gapSkipped = { from: state.highWater, to: oldestAllowed };
      floor = oldestAllowed;
    }
  }
  // The newest calls first: down to the top of an unfinished read (its calls were just read,
  // so no safety window), or to the floor.
  const firstStop = state.resume ? Math.max(floor, state.resume.top) : floor;

  /** Reads pages from `page` on until a call older than `stop`; false when cut short. */
  const readFrom = async (page: number, stop: number): Promise<{ reached: boolean; next: number; oldest: number | null }> => {
    let oldest: number | null = null;
    for (let p = page; ; p++) {
      if (budget <= 0) return { reached: false, next: p, oldest };
      budget -= 1;
      pages += 1;
      const { items, meta } = await client.listCalls({ perPage: options.perPage, page: p }, { signal: deps.signal });
      let past = false;
      for (const item of items) {
        const t = Date.parse(item.started_at);
        if (!seen.has(item.call_id)) seen.set(item.call_id, item);
        if (t < stop) past = true;
        oldest = oldest === null ? t : Math.min(oldest, t);
      }
      if (past || !meta.has_next || items.length === 0) return { reached: true, next: p + 1, oldest };
    }
  };

  let complete = false;
  let reachedBelow: number | null = state.resume?.below ?? null;
  /** The newest calls were read down to the unfinished read (or there is none). */
  let topReached = true;
  try {
    const top = await readFrom(1, firstStop);
    topReached = top.reached;
    if (!state.resume) {
      complete = top.reached;
      reachedBelow = top.oldest;
    } else if (top.reached) {
      // Continue the unfinished read where it stopped: the calls at or after `below` (stored, or
      // new this cycle) fill the first positions of the list; its page is the next one to read.
      const covered = (await repo.countSince(state.resume.below, deps.account)) + (await countNew(seen, repo, state.resume.below, deps.account));
      const page = Math.max(top.next, Math.floor(covered / options.perPage) + 1);
      const rest = await readFrom(page, floor);
      complete = rest.reached;
      if (rest.oldest !== null) reachedBelow = Math.min(reachedBelow ?? rest.oldest, rest.oldest);
    }
  } catch (err) {
    if (deps.signal?.aborted) throw err;
    errorCode = err instanceof BoxwatchError ? err.code : 'internal';
    logger.warn({ code: errorCode, err: errorMessage(err) }, 'reading the call list failed; continuing next cycle');
  }

  // Observations from the list.
  const known = await repo.known([...seen.keys()].map((id) => callKey(deps.account, id)));
  const upserts: CallObservation[] = [];
  const checked: string[] = [];
  let added = 0;
  const ended = new Map<string, { serial: string; status: string }>();
  for (const summary of seen.values()) {
    const before = known.get(callKey(deps.account, summary.call_id));
    const obs = observe(summary, null, deps);
    if (obs === null) continue;
    if (before === undefined) added += 1;
    if (FINAL.has(obs.status) && (before === undefined || !FINAL.has(before.status))) ended.set(obs.callId, obs);
    if (before === undefined || before.status !== obs.status) upserts.push(obs);
    else if (obs.status === 'initiated') checked.push(obs.callId);
  }

  // Call details: final calls whose details are wanted, then calls still initiated.
  const listed = new Set([...seen.keys()].map((id) => callKey(deps.account, id)));
  const candidates = new Map<string, CallRecord>();
  for (const o of upserts) if (o.wantsDetails) candidates.set(o.callId, o);
  for (const c of await repo.dueForDetails(budget, { account: deps.account, checkedBefore: now, initiatedSince: oldestAllowed })) {
    if (c.status === 'initiated' && listed.has(c.callId)) continue; // just read in the list
    if (!candidates.has(c.callId)) candidates.set(c.callId, c);
  }
  const toRead = [...candidates.values()].slice(0, Math.max(0, budget));
  const read = await mapWithConcurrency(toRead, options.concurrency, async (c): Promise<Call | 'gone' | null> => {
    try {
      return await client.getCall(splitBoxKey(c.callId).serial, { signal: deps.signal });
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      const code = err instanceof BoxwatchError ? err.code : 'internal';
      if (code === 'call_not_found') return 'gone';
      logger.warn({ call: c.callId, code, err: errorMessage(err) }, 'reading call details failed; trying again next cycle');
      return null;
    }
  });
  const byId = new Map(upserts.map((o) => [o.callId, o]));
  const recordings: CallSyncResult['recordings'] = [];
  read.forEach((call, i) => {
    const before = toRead[i] as CallRecord;
    if (call === null) return;
    if (call === 'gone') {
      // The vendor no longer knows the call: there is nothing more to read about it.
      byId.set(before.callId, { ...before, recording: before.recording ?? 'none', detailsRead: true, wantsDetails: false });
      return;
    }
    const obs = observe(call, call, deps);
    if (obs === null) return;
    if (obs.recording === 'available' && call.audio_record_url !== undefined) recordings.push({ callId: obs.callId, url: call.audio_record_url });
    if (FINAL.has(obs.status) && !FINAL.has(before.status)) ended.set(obs.callId, obs);
    if (obs.status === 'initiated' && before.status === 'initiated' && !byId.has(obs.callId)) checked.push(obs.callId);
    else byId.set(obs.callId, obs);
  });
  const allUpserts = [...byId.values()];
  const upsertIds = new Set(byId.keys());

  const sync: CallSyncState = complete
    ? { highWater: Math.max(state.highWater ?? Number.NEGATIVE_INFINITY, state.resume?.top ?? Number.NEGATIVE_INFINITY, newest(seen) ?? Number.NEGATIVE_INFINITY), syncedAt: now, resume: null }
    : {
        highWater: state.highWater,
        syncedAt: state.syncedAt,
        resume:
          reachedBelow === null && state.resume === null
            ? null
            : {
                // A resumed read whose newest pages were cut short keeps its top: below it is a hole.
                top: state.resume && !topReached ? state.resume.top : Math.max(state.resume?.top ?? Number.NEGATIVE_INFINITY, newest(seen) ?? Number.NEGATIVE_INFINITY),
                below: reachedBelow ?? state.resume?.below ?? now,
                floor,
              },
      };
  if (sync.highWater === Number.NEGATIVE_INFINITY) sync.highWater = state.highWater;
  await repo.write({ account: deps.account, now, upserts: allUpserts, checked: checked.filter((id) => !upsertIds.has(id)), sync, stuckAfterMs: options.stuckAfterMs });
  if (gapSkipped) {
    logger.warn(
      { from: isoTime(gapSkipped.from), to: isoTime(gapSkipped.to), catchUpMs: options.catchUpMs },
      'calls: the gap since the last read is longer than calls.catch_up; calls in it are not read',
    );
  }
  return {
    outcome: errorCode === null ? 'ok' : 'failed',
    errorCode,
    pages,
    details: toRead.length,
    added,
    updated: allUpserts.length - added,
    complete,
    gapSkipped,
    ended: [...ended.values()].map((c) => ({ serial: c.serial, status: c.status })),
    recordings,
  };
}

/** Calls seen this cycle that started at or after `since` and are not stored yet. */
async function countNew(seen: ReadonlyMap<string, CallSummary>, repo: CallsRepo, since: number, account: string): Promise<number> {
  const ids = [...seen.values()].filter((c) => Date.parse(c.started_at) >= since).map((c) => callKey(account, c.call_id));
  const known = await repo.known(ids);
  return ids.filter((id) => !known.has(id)).length;
}

function newest(seen: ReadonlyMap<string, CallSummary>): number | null {
  let best: number | null = null;
  for (const c of seen.values()) {
    const t = Date.parse(c.started_at);
    if (best === null || t > best) best = t;
  }
  return best;
}

/**
 * A list summary (details null) or a full call as a CallObservation (keyed by the account's call
 * key and box id: the boundary between the gateway's ids and the stored ones); null if `from` is not a box.
 */
function observe(summary: CallSummary, details: Call | null, deps: Pick<CallSyncDeps, 'account' | 'options' | 'hashKey'>): CallObservation | null {
  const serial = BOX_FROM.exec(summary.from)?.[1];
  if (serial === undefined) return null;
  const { options } = deps;
  const final = FINAL.has(summary.status);
  let recording: RecordingState | null = null;
  if (summary.status === 'failed') recording = 'none';
  else if (details !== null && final) recording = details.audio_record_url ? 'available' : 'none';
  const wantsDetails = summary.status === 'completed' && (options.wantRecordings || options.storeTranscripts);
  return {
    callId: callKey(deps.account, summary.call_id),
    serial: boxKey(deps.account, serial),
    agentId: summary.agent_id,
    status: summary.status,
    direction: summary.direction,
    startedAt: Date.parse(summary.started_at),
    endedAt: summary.ended_at === undefined ? null : Date.parse(summary.ended_at),
    durationSec: summary.duration_sec ?? null,
    toHash: hashNumber(deps.hashKey, summary.to),
    toMasked: maskNumber(summary.to),
    toNumber: options.storeNumbers ? summary.to : null,
    recording,
    transcript: options.storeTranscripts && details?.transcript !== undefined ? details.transcript : null,
    variables: options.storeTranscripts && details?.variables !== undefined ? details.variables : null,
    detailsRead: details !== null && final,
    wantsDetails,
  };
}
