/**
 * One poll cycle: device list, then details for the boxes that need them (bounded concurrency),
 * merged into snapshots and written to the store in one transaction. A failed cycle (gateway
 * unreachable, unauthorized, bad response) is recorded with its reason and leaves every box's
 * state as it was: unknown, never guessed. A cycle abandoned through `signal` (shutdown) records
 * nothing and rejects with the signal's reason.
 *
 * Bounds (docs/reliability.md#bounds): a record that violates the schema is set aside (counted,
 * logged once per serial, named by gateway_schema) and the rest of the fleet is processed; a cycle
 * has a deadline (`deadlineMs`): details not back by then are skipped (their boxes keep their
 * previous details) and the list-based rules still run; a gateway Date header further than
 * MAX_CLOCK_SKEW_MS from our clock is ignored and reported (gateway_clock).
 */
import { setMaxListeners } from 'node:events';
import { abortWith } from '../abort.js';
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { BoxwatchError, errorMessage } from '../errors.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Device, DeviceSummary } from '../gateway/schemas.js';
import type { Logger } from '../log.js';
import type { BoxSnapshot } from '../domain/model.js';
import type { BoxState, CycleRecord, CycleWrite, Store } from '../domain/store.js';
import { formatDuration } from '../duration.js';
import { boxKey, DEFAULT_ACCOUNT } from '../box-id.js';
import { selectForDetails, type DetailsPolicy } from './policy.js';
import { RecordQuarantine } from './quarantine.js';
import { mapWithConcurrency } from './pool.js';

export interface CycleDeps {
  /**
   * The account polled (src/box-id.ts; default "default"): the cycle covers that account's boxes
   * only (`missing` is judged among them), stores them under their ids, and is recorded as its.
   */
  account?: string;
  /** The account's gateway client. */
  client: GatewayClient;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Device-details requests in flight at most. */
  concurrency: number;
  policy: DetailsPolicy;
  /** HTTP attempts made so far by the client (retries included); the cycle records the difference. */
  requestCount: () => number;
  signal?: AbortSignal;
  /**
   * Writes the cycle (one transaction). Defaults to `store.recordCycle`; the app wraps it to write
   * the alert transitions the cycle causes in the same transaction. May be asynchronous.
   */
  commit?: (write: CycleWrite, serverTime: number | null) => Awaitable<unknown>;
  /**
   * The cycle's deadline, ms from its start on `clock` (the app derives it from the schedule). At
   * the deadline the requests in flight are abandoned: details not back are skipped, a device list
   * not back fails the cycle with `deadline`. Default: none.
   */
  deadlineMs?: number;
  /** Remembers which invalid records were logged already (default: a new one per cycle). */
  quarantine?: RecordQuarantine;
}

/** The largest gateway clock skew applied (1 day); a Date header further off is ignored. */
export const MAX_CLOCK_SKEW_MS = 86_400_000;

/** Why the requests of a cycle were abandoned at its deadline. */
class CycleDeadline extends BoxwatchError {
  constructor(ms: number) {
    super('deadline', `the cycle deadline (${formatDuration(ms)}) passed`);
  }
}

export interface CycleResult {
  cycle: CycleRecord;
  /** Boxes in the list this cycle (empty when failed), `serial` their id (src/box-id.ts). */
  seen: BoxSnapshot[];
  /** Ids of the boxes that left the device list this cycle. */
  missing: string[];
  /** Ids of the boxes that came back to the device list this cycle. */
  returned: string[];
  /** The gateway's clock from the device list's Date header, when known. */
  serverTime: number | null;
  /** Details requests that failed this cycle (the boxes keep their previous details). */
  detailsFailed: number;
}

/** An abort signal for the cycle's requests: shutdown or the deadline, whichever comes first. */
function cycleSignal(deps: CycleDeps): { signal: AbortSignal | undefined; deadlinePassed: () => boolean; end: () => void } {
  if (deps.deadlineMs === undefined) return { signal: deps.signal, deadlinePassed: () => false, end: () => undefined };
  const deadline = new AbortController();
  const ended = new AbortController();
  const ms = deps.deadlineMs;
  // A flag, not `deadline.signal.aborted`: signals of different hidden classes would make V8 recompile the per-request check.
  let passed = false;
  deps.clock.sleep(ms, ended.signal).then(
    () => {
      passed = true;
      deadline.abort(new CycleDeadline(ms));
    },
    () => undefined, // the cycle ended first
  );
  const unlink = abortWith(deps.signal, deadline);
  const signal = deadline.signal;
  setMaxListeners(0, signal); // one per gateway request and one per backoff sleep in flight (gateway.concurrency may exceed 10)
  return {
    signal,
    deadlinePassed: () => passed,
    end: () => {
      unlink();
      ended.abort();
    },
  };
}

const errorCode = (err: unknown): string => (err instanceof BoxwatchError ? err.code : 'internal');

export async function runCycle(deps: CycleDeps): Promise<CycleResult> {
  const bounded = cycleSignal(deps);
  try {
    return await runBoundedCycle(deps, bounded.signal, bounded.deadlinePassed);
  } finally {
    bounded.end();
  }
}

async function runBoundedCycle(deps: CycleDeps, signal: AbortSignal | undefined, deadlinePassed: () => boolean): Promise<CycleResult> {
  const { store, clock, logger } = deps;
  const commit = deps.commit ?? ((write: CycleWrite) => store.recordCycle(write));
  const account = deps.account ?? DEFAULT_ACCOUNT;
  const startedAt = clock.now();
  const requestsBefore = deps.requestCount();
  const finish = (fields: Omit<CycleRecord, 'startedAt' | 'durationMs' | 'requests' | 'account'>): CycleRecord => ({
    startedAt,
    durationMs: clock.now() - startedAt,
    requests: deps.requestCount() - requestsBefore,
    ...fields,
    account,
  });

  // What the gateway said, merged into snapshots. The gateway's own answers (the device list, the
  // details) are not kept past this call: the commit below runs the history writer and the alert
  // stage while they would otherwise still be reachable from this frame, and the garbage
  // collector would copy them.
  const polled = await pollGateway(deps, account, startedAt, signal, deadlinePassed);
  const { serverTime, gatewayClockSkewMs, rejected } = polled;
  if (!polled.ok) {
    const failure = polled.failure;
    const cycle = finish({ outcome: 'failed', errorCode: errorCode(failure), error: errorMessage(failure), boxes: 0, detailsFetched: 0, gatewayClockSkewMs });
    await commit({ cycle, seen: [], missing: [] }, serverTime);
    logger.warn({ account, code: cycle.errorCode, err: cycle.error }, 'poll cycle failed');
    return { cycle, seen: [], missing: [], returned: [], serverTime, detailsFailed: 0 };
  }
  const { seen, missing, returned } = polled;
  const cycle = finish({ outcome: 'ok', errorCode: null, error: null, boxes: seen.length, detailsFetched: polled.detailsFetched, rejected, detailsSkipped: polled.detailsSkipped, gatewayClockSkewMs });
  await commit({ cycle, seen, missing }, serverTime);
  if (missing.length > 0) logger.warn({ account, serials: missing }, 'boxes missing from the device list');
  if (returned.length > 0) logger.info({ account, serials: returned }, 'boxes back in the device list');
  logger.debug({ account, boxes: cycle.boxes, details: cycle.detailsFetched, ms: cycle.durationMs, requests: cycle.requests }, 'poll cycle done');
  return { cycle, seen, missing, returned, serverTime, detailsFailed: polled.detailsFailed };
}

/** What a cycle got from the gateway (pollGateway): the device list failed (`failure`), or the fleet's snapshots. */
type Polled = { serverTime: number | null; gatewayClockSkewMs: number | null; rejected: string[] } & (
  | { ok: false; failure: unknown }
  | { ok: true; seen: BoxSnapshot[]; missing: string[]; returned: string[]; detailsFetched: number; detailsSkipped: number; detailsFailed: number }
);

/**
 * The gateway part of a cycle: the device list, the details of the boxes that need them, merged
 * into the account's snapshots; which known boxes left the list or came back. A device list that
 * fails is returned as `failure` (the vendor's "no connected devices" is an empty fleet).
 */
async function pollGateway(deps: CycleDeps, account: string, startedAt: number, signal: AbortSignal | undefined, deadlinePassed: () => boolean): Promise<Polled> {
  const { client, clock, logger } = deps;
  const quarantine = deps.quarantine ?? new RecordQuarantine(logger);
  const rejected: string[] = [];
  const setAside = (endpoint: string, serial: string | null, problem: string): void => {
    quarantine.report(endpoint, serial, problem);
    rejected.push(`${serial ?? '(no serial)'}: ${problem}`);
  };

  // The device list is read in a function of its own, which returns the snapshots without this
  // cycle's details: the list itself is garbage before the details requests, instead of being
  // copied and promoted by the garbage collections they cause.
  const listed = await pollDeviceList(deps, account, startedAt, signal, deadlinePassed, setAside);
  if (!listed.ok) return { ...listed, rejected };
  const { seen, due, serverTime, gatewayClockSkewMs } = listed;
  let detailsFailed = 0;
  let detailsSkipped = 0;
  const fetched = await mapWithConcurrency(due, deps.concurrency, async (serial) => {
    if (deadlinePassed()) {
      detailsSkipped += 1;
      return undefined;
    }
    try {
      const device = await client.getDevice(serial, { signal });
      if (device.serial_no !== serial) {
        setAside('device_details', serial, `serial_no: the details of ${serial} name ${device.serial_no}`);
        return undefined;
      }
      return device;
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      if (deadlinePassed()) {
        detailsSkipped += 1;
        return undefined;
      }
      detailsFailed += 1;
      if (errorCode(err) === 'schema' || errorCode(err) === 'too_large') setAside('device_details', serial, errorMessage(err));
      else logger.warn({ serial, code: errorCode(err), err: errorMessage(err) }, 'device details failed; keeping previous details');
      return undefined;
    }
  });
  deps.signal?.throwIfAborted(); // abandoned while fetching details: nothing is recorded
  if (detailsSkipped > 0) {
    logger.warn({ skipped: detailsSkipped, deadlineMs: deps.deadlineMs }, 'device details not back by the cycle deadline were skipped; those boxes keep their previous details');
  }
  // By box id, as the snapshots are.
  const details = new Map<string, Device>();
  for (const d of fetched) if (d) details.set(boxKey(account, d.serial_no), d);
  addDetails(seen, details, clock.now(), listed.skewMs);
  return { ok: true, serverTime, gatewayClockSkewMs, rejected, seen, missing: listed.missing, returned: listed.returned, detailsFetched: details.size, detailsSkipped, detailsFailed };
}

/** What the device list gave (pollDeviceList): its failure, or the snapshots before details and the serials whose details are due. */
type Listed = { serverTime: number | null; gatewayClockSkewMs: number | null } & (
  | { ok: false; failure: unknown }
  | { ok: true; skewMs: number; seen: BoxSnapshot[]; due: string[]; missing: string[]; returned: string[] }
);

/**
 * The device list part of a cycle: the list, the account's known boxes, the serials whose details
 * are due, the listed boxes' snapshots with their previous details, which known boxes left the
 * list or came back. Records set aside go to `setAside`.
 */
async function pollDeviceList(
  deps: CycleDeps,
  account: string,
  startedAt: number,
  signal: AbortSignal | undefined,
  deadlinePassed: () => boolean,
  setAside: (endpoint: string, serial: string | null, problem: string) => void,
): Promise<Listed> {
  const { client, store, clock, logger } = deps;
  let summaries: DeviceSummary[];
  let serverTime: number | null = null;
  let skewMs = 0;
  let gatewayClockSkewMs: number | null = null;
  /** Serials of records set aside (they are not missing); null once a record had no usable serial. */
  let setAsideSerials: Set<string> | null = new Set();
  try {
    const list = await client.listDevices({ signal });
    summaries = list.devices;
    for (const r of list.rejected) {
      setAside('device_list', r.serial, `data[${r.index}]: ${r.problem}`);
      if (r.serial === null) setAsideSerials = null;
      else setAsideSerials?.add(r.serial);
    }
    serverTime = list.serverTime;
    skewMs = gatewaySkew(serverTime, clock.now());
    if (Math.abs(skewMs) > MAX_CLOCK_SKEW_MS) {
      // A Date header this far off is wrong, not a skew to correct: ignored, and reported.
      gatewayClockSkewMs = skewMs;
      skewMs = 0;
      serverTime = null;
      logger.warn({ skewMs: gatewayClockSkewMs }, 'the gateway clock is off by more than a day; its Date header is ignored');
    }
  } catch (err) {
    if (deps.signal?.aborted) throw err; // abandoned (shutdown): nothing is recorded
    const failure = deadlinePassed()
      ? new BoxwatchError('deadline', `the device list did not arrive before the cycle deadline (${formatDuration(deps.deadlineMs ?? 0)})`)
      : err;
    if (errorCode(failure) !== 'no_devices') return { ok: false, failure, serverTime, gatewayClockSkewMs };
    summaries = []; // the vendor's "No connected devices found": an empty fleet, not a failure
  }

  const known = knownBoxes(await store.boxes(), account);
  const due = selectForDetails(summaries, known, startedAt, deps.policy);
  const seen = snapshotsOf(summaries, account, known, skewMs);
  const { missing, returned } = leftAndBack(known, summaries, setAsideSerials);
  return { ok: true, serverTime, gatewayClockSkewMs, skewMs, seen, due, missing, returned };
}

// The loops over the whole fleet below are functions of their own, not inline in pollGateway: V8
// would otherwise compile all of pollGateway in the middle of such a loop (on-stack replacement)
// and again each time the next cycle takes a branch that compile had not seen. Loops, not map()
// with an arrow made per cycle: V8 drops an arrow's optimized code once the cycle's arrows are
// garbage, and compiles it again the next cycle.

/** The listed boxes' snapshots: each summary with what is known of the box (its previous details). */
function snapshotsOf(summaries: readonly DeviceSummary[], account: string, known: ReadonlyMap<string, BoxState>, skewMs: number): BoxSnapshot[] {
  const seen: BoxSnapshot[] = [];
  for (const s of summaries) {
    const previous = known.get(s.serial_no);
    // A known box's stored id is boxKey's string already: kept, not built again per box and cycle
    // (the new string would live on with the box's state).
    seen.push(listedSnapshot(previous?.serial ?? boxKey(account, s.serial_no), s, previous, skewMs));
  }
  return seen;
}

/** The snapshots of the boxes whose details came this cycle (`details`, by box id), in place: merged with them. */
function addDetails(seen: BoxSnapshot[], details: ReadonlyMap<string, Device>, detailsAt: number, skewMs: number): void {
  if (details.size === 0) return;
  for (let i = 0; i < seen.length; i++) {
    const snap = seen[i] as BoxSnapshot;
    const d = details.get(snap.serial);
    if (d !== undefined) seen[i] = withDetails(snap, d, detailsAt, skewMs);
  }
}

/** The account's boxes by the gateway's serial (the cycle talks to the gateway in its serials). */
function knownBoxes(boxes: readonly BoxState[], account: string): Map<string, BoxState> {
  const known = new Map<string, BoxState>();
  const prefix = boxKey(account, '').length; // the id is the serial after this many characters
  for (const b of boxes) if (b.account === account) known.set(prefix === 0 ? b.serial : b.serial.slice(prefix), b);
  return known;
}

/**
 * The ids of the known boxes that left the device list (`summaries`) and of those that came back.
 * A box whose record was set aside (`setAside`) is listed, just unreadable; when a record had no
 * readable serial (`setAside` null), no box can be called missing this cycle (it may be that one).
 */
function leftAndBack(known: ReadonlyMap<string, BoxState>, summaries: readonly DeviceSummary[], setAside: ReadonlySet<string> | null): { missing: string[]; returned: string[] } {
  const listed = new Set<string>();
  for (const s of summaries) listed.add(s.serial_no);
  const missing: string[] = [];
  const returned: string[] = [];
  for (const [serial, b] of known) {
    if (b.missingSince === null && setAside !== null && !listed.has(serial) && !setAside.has(serial)) missing.push(b.serial);
    else if (b.missingSince !== null && listed.has(serial)) returned.push(b.serial);
  }
  return { missing, returned };
}

/**
 * How far the gateway's clock is ahead of ours (ms), from the HTTP Date header of a response
 * received at `localNow`. The header has whole seconds, so differences under 2 s count as none.
 */
export function gatewaySkew(serverTime: number | null, localNow: number): number {
  if (serverTime === null) return 0;
  const skew = serverTime - localNow;
  return Math.abs(skew) < 2_000 ? 0 : skew;
}

/**
 * A listed box's snapshot before this cycle's details: the summary's fields from this cycle's
 * list; signal, location, IP and registration from the box's last details (none for a new box).
 * The gateway's times (last_seen, registered_at) are moved onto our clock by `skewMs`, so that a
 * gateway whose clock is off neither fires nor hides the stale rule, and "last seen 2m ago" means
 * what it says. `serial` is the box's id (src/box-id.ts): the gateway's serial, prefixed outside
 * the default account.
 */
export function listedSnapshot(serial: string, summary: DeviceSummary, previous: BoxState | undefined, skewMs = 0): BoxSnapshot {
  return {
    serial,
    id: summary.id,
    name: sameText(previous?.name, summary.device_name),
    connected: summary.connected,
    battery: summary.battery_level,
    signal: previous?.signal ?? null,
    firmware: sameText(previous?.firmware, summary.firmware_version),
    lastSeen: onOurClock(summary.last_seen, skewMs),
    registeredAt: previous?.registeredAt ?? null,
    location: previous?.location ?? null,
    ip: previous?.ip ?? null,
    detailsAt: previous?.detailsAt ?? null,
  };
}

/**
 * A listed box's snapshot with its details fetched now (at `detailsAt`): the details' fields
 * replace the summary's, signal, location, IP and registration are fresh, and the box was last
 * seen at the later of the list's and the details' times.
 */
export function withDetails(snap: BoxSnapshot, details: Device, detailsAt: number, skewMs = 0): BoxSnapshot {
  return {
    serial: snap.serial,
    id: snap.id,
    name: sameText(snap.name, details.device_name),
    connected: details.connected,
    battery: details.battery_level,
    signal: details.signal_strength,
    firmware: sameText(snap.firmware, details.firmware_version),
    lastSeen: Math.max(snap.lastSeen, onOurClock(details.last_seen, skewMs)),
    registeredAt: onOurClock(details.registered_at, skewMs),
    location: sameText(snap.location, details.location),
    ip: sameText(snap.ip, details.ip_address),
    detailsAt,
  };
}

/**
 * `text`, or the equal text the box's snapshot or state holds already: the cycle's own copy (each
 * cycle's JSON.parse makes new strings) is then garbage when the cycle ends, instead of being kept
 * with the box's new state, hence copied and promoted by the garbage collector.
 */
function sameText<T extends string | null>(held: string | null | undefined, text: T): T {
  return (held === text ? held : text) as T;
}

/** A gateway time (ISO 8601) on our clock: its skew subtracted. */
function onOurClock(iso: string, skewMs: number): number {
  return Date.parse(iso) - skewMs;
}
