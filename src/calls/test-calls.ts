/**
 * Test calls (docs/calls.md, "Test calls"): synthetic monitoring of the whole call path. Each
 * `test_calls:` entry places a call on its schedule from every box it selects, to its number with
 * its agent, and `boxwatch test-call run` places one now. This module owns the attempt (caps,
 * connected check, make-call) and the verdict on how each box's latest test call went; the call
 * sync (sync.ts) follows the calls themselves, and the `test_call_failed` alert is judged by the
 * alert pipeline from `testCallVerdicts`.
 *
 * One attempt: the day's calls are counted against the caps (skip if reached), the box is read
 * through device details (skip unless connected), then a slot is reserved in the same SQLite
 * transaction that counts the caps again, and only then is make-call sent. A process that dies
 * after reserving leaves the slot used: boxwatch errs on the side of placing fewer test calls,
 * never more than the caps.
 *
 * Boxes are named by their id (src/box-id.ts): a test call is placed through the box's own
 * account (`clientOf`) from the gateway's serial, and stored under the box id and call key, so
 * that its verdict is judged by the cycle of the box's account.
 */
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import type { TestCallConfig } from '../config/schema.js';
import { formatDuration } from '../duration.js';
import { BoxwatchError, errorMessage } from '../errors.js';
import type { GatewayClient } from '../gateway/types.js';
import { accountOf, boxMatches, callKey, splitBoxKey } from '../box-id.js';
import type { Logger } from '../log.js';
import { mapWithConcurrency } from '../poller/pool.js';
import { dayOf } from '../domain/calls.js';
import { capReached, type CapUse, type TestCallsRepo, type TestCallVerdict, type TestCallWithCall } from '../domain/test-calls.js';
import type { BoxState } from '../domain/store.js';
import { requireConnected } from './place.js';
import { maskNumber } from './privacy.js';

/** What one attempt did. */
export type TestCallAttempt =
  | { entry: string; serial: string; outcome: 'placed'; callId: string; used: CapUse }
  | { entry: string; serial: string; outcome: 'rejected'; reason: string; used: CapUse }
  | { entry: string; serial: string; outcome: 'skipped'; skip: 'cap' | 'disconnected' | 'unknown_box' | 'error'; reason: string };

export interface TestCalls {
  readonly entries: readonly TestCallConfig[];
  /** One attempt from every box the entry selects (its schedule's tick). */
  runEntry(name: string, signal?: AbortSignal): Promise<TestCallAttempt[]>;
  /**
   * One test call now (`boxwatch test-call run`): from `serial`, or else from the first selected
   * box the last poll saw connected that has calls left today.
   */
  runOne(entry: TestCallConfig, serial: string | undefined, signal?: AbortSignal): Promise<TestCallAttempt>;
  /** Per box, the verdict on its latest decided test call as last read (`refresh`, and after each run); boxes without one are absent. */
  verdicts(now: number): Map<string, TestCallVerdict>;
  /** Reads the boxes' recent test calls again (after a call sync: their calls' statuses changed); `verdicts` judges them. */
  refresh(): Promise<void>;
}

export interface TestCallsDeps {
  entries: readonly TestCallConfig[];
  repo: TestCallsRepo;
  /** The fleet as the last poll left it (which boxes exist, and were connected). */
  boxes: () => Awaitable<readonly BoxState[]>;
  /** The gateway client of an account; undefined: not this process's to work for (replicas), its boxes are left out. */
  clientOf: (account: string) => GatewayClient | undefined;
  clock: Clock;
  logger: Logger;
  /** Attempts in flight at most (device details and make-call requests). */
  concurrency: number;
}

/** Test calls looked at per box to find its latest decided one. */
const RECENT_PER_BOX = 10;

export function createTestCalls(deps: TestCallsDeps): TestCalls {
  const { repo, clock, logger } = deps;
  const byName = new Map(deps.entries.map((e) => [e.name, e]));
  /** Each box's recent test calls as last read (`refresh`): what `verdicts` judges. */
  let recent = new Map<string, TestCallWithCall[]>();
  const refresh = async (): Promise<void> => {
    recent = await repo.recent(RECENT_PER_BOX);
  };

  const skip = async (entry: TestCallConfig, serial: string, skipKind: Extract<TestCallAttempt, { outcome: 'skipped' }>['skip'], reason: string): Promise<TestCallAttempt> => {
    const at = clock.now();
    await repo.skipped({ entry: entry.name, serial, agentId: entry.agent, day: dayOf(at), at, reason });
    logger.info({ entry: entry.name, box: serial, reason }, 'test call skipped');
    return { entry: entry.name, serial, outcome: 'skipped', skip: skipKind, reason };
  };

  const capText = (entry: TestCallConfig, cap: 'per_box' | 'total', used: CapUse): string =>
    cap === 'per_box'
      ? `daily cap reached: ${used.box} of ${entry.dailyCap.perBox} test calls from this box today (UTC)`
      : `daily cap reached: ${used.total} of ${entry.dailyCap.total} test calls of ${entry.name} today (UTC)`;

  const attempt = async (entry: TestCallConfig, serial: string, signal?: AbortSignal): Promise<TestCallAttempt> => {
    const caps = entry.dailyCap;
    const { account, serial: gatewaySerial } = splitBoxKey(serial);
    const client = deps.clientOf(account);
    if (client === undefined) return skip(entry, serial, 'unknown_box', `box ${serial} is of account ${account}, which has no gateway here`);
    // A cheap check first: no device-details request for a box whose calls are used up.
    const before = await repo.used(entry.name, dayOf(clock.now()), serial);
    const cap = capReached(before, caps);
    if (cap !== null) return skip(entry, serial, 'cap', capText(entry, cap, before));
    try {
      await requireConnected(client, gatewaySerial, { signal });
    } catch (err) {
      if (signal?.aborted) throw err;
      const code = err instanceof BoxwatchError ? err.code : 'internal';
      if (code === 'box_disconnected') return skip(entry, serial, 'disconnected', errorMessage(err));
      if (code === 'box_not_found') return skip(entry, serial, 'unknown_box', errorMessage(err));
      return skip(entry, serial, 'error', `cannot read the box's state: ${errorMessage(err)}`);
    }
    // The slot is taken (and the caps checked again) in one transaction before make-call is sent.
    const at = clock.now();
    const reserved = await repo.reserve({ entry: entry.name, serial, agentId: entry.agent, day: dayOf(at), at, caps });
    if (!reserved.ok) return skip(entry, serial, 'cap', capText(entry, reserved.cap, reserved.used));
    const to = maskNumber(entry.to);
    try {
      const result = await client.makeCall({ from: `box:${gatewaySerial}`, to: entry.to, agentId: entry.agent }, { signal });
      const id = callKey(account, result.call_id);
      await repo.placed(reserved.id, id);
      logger.info({ entry: entry.name, box: serial, call: id, to, agent: entry.agent, used: reserved.used }, 'test call placed');
      return { entry: entry.name, serial, outcome: 'placed', callId: id, used: reserved.used };
    } catch (err) {
      const reason = `make-call failed: ${errorMessage(err)}`;
      await repo.rejected(reserved.id, reason);
      if (signal?.aborted) throw err;
      logger.warn({ entry: entry.name, box: serial, to, code: err instanceof BoxwatchError ? err.code : 'internal', err: errorMessage(err) }, 'test call could not be placed');
      return { entry: entry.name, serial, outcome: 'rejected', reason, used: reserved.used };
    }
  };

  // The boxes the entry selects, with the rules' matcher (`BX-*` selects acme/BX-1 too), of the accounts worked for here.
  const selected = async (entry: TestCallConfig): Promise<BoxState[]> =>
    (await deps.boxes()).filter((b) => b.missingSince === null && boxMatches(b.serial, entry.boxes) && deps.clientOf(accountOf(b.serial)) !== undefined);

  return {
    entries: deps.entries,
    async runEntry(name, signal) {
      const entry = byName.get(name);
      if (entry === undefined) return [];
      const attempts = await mapWithConcurrency(await selected(entry), deps.concurrency, async (box) => {
        // The vendor's rule is checked fresh before each call; a box the last poll saw disconnected is not even asked.
        if (box.connected !== true) return skip(entry, box.serial, 'disconnected', `box ${box.serial} was disconnected at the last poll`);
        return attempt(entry, box.serial, signal);
      });
      await refresh();
      return attempts;
    },
    async runOne(entry, serial, signal) {
      if (serial !== undefined) return attempt(entry, serial, signal);
      const day = dayOf(clock.now());
      const connected = (await selected(entry)).filter((b) => b.connected === true);
      const candidates = (await Promise.all(connected.map(async (b) => ({ serial: b.serial, used: await repo.used(entry.name, day, b.serial) }))))
        .sort((a, b) => a.used.box - b.used.box || (a.serial < b.serial ? -1 : a.serial > b.serial ? 1 : 0));
      const first = candidates[0];
      if (first === undefined) {
        throw new BoxwatchError('no_box', `no box selected by test call ${entry.name} (boxes: ${entry.boxes.join(', ')}) was connected at the last poll`);
      }
      return attempt(entry, first.serial, signal);
    },
    refresh,
    verdicts(now) {
      const out = new Map<string, TestCallVerdict>();
      for (const [serial, calls] of recent) {
        for (const call of calls) {
          const verdict = judge(call, byName.get(call.entry), now);
          if (verdict === null) continue;
          out.set(serial, verdict);
          break;
        }
      }
      return out;
    },
  };
}

/** Used for a test call whose entry is no longer configured. */
const DEFAULT_TIMEOUT_MS = 15 * 60_000;

/** The verdict on one test call, or null while it is not decided (in flight, or reserved by a process that died). */
function judge(call: TestCallWithCall, entry: TestCallConfig | undefined, now: number): TestCallVerdict | null {
  const timeoutMs = entry?.timeout ?? DEFAULT_TIMEOUT_MS;
  const base = { entry: call.entry, severity: entry?.severity ?? 'critical', callId: call.callId, threshold: `completed within ${formatDuration(timeoutMs)}` };
  const id = call.callId === null ? 'test call' : `test call ${call.callId}`;
  if (call.state === 'rejected') return { ...base, failed: true, summary: `${id} (${call.entry}) could not be placed: ${call.reason ?? 'make-call failed'}` };
  if (call.state !== 'placed') return null;
  if (call.callStatus === 'completed') {
    const length = call.durationSec === null ? '' : ` (${formatDuration(call.durationSec * 1000)})`;
    return { ...base, failed: false, summary: `${id} (${call.entry}) completed${length}` };
  }
  if (call.callStatus === 'failed') return { ...base, failed: true, summary: `${id} (${call.entry}) failed` };
  if (now - call.at > timeoutMs) {
    const seen = call.callStatus === null ? 'not seen in the call list' : `still ${call.callStatus}`;
    return { ...base, failed: true, summary: `${id} (${call.entry}) not completed within ${formatDuration(timeoutMs)} (${seen})` };
  }
  return null;
}
