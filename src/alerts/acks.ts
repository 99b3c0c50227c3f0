/**
 * Acknowledgements: "someone is on it". An ack belongs to one firing episode of one alert (its
 * key and the `firingSince` it was given for) and stops that alert's repeat notifications
 * (`repeat_interval`) while it is in effect. It ends, by itself, when:
 *
 * - the alert resolves (or fires anew: another `firingSince`): the resolve is still notified;
 * - its severity rises above the severity it had when acknowledged;
 * - `until` passes (`--for 4h`); null: until the alert resolves.
 *
 * `ackInEffect` is the one place that decides; the engine, the views and the messages call it.
 * The storage is an AckRepository, an interface owned here (the consumer) and implemented by the
 * store (src/store/sqlite/acks.ts); the cycle reads the acks in its transaction (CycleView.acks).
 */
import type { Awaitable } from '../awaitable.js';
import { readDuration } from '../duration.js';
import { ambiguityMessage, fleetKey, isFleetKey, resolveBoxId } from '../box-id.js';
import { UsageError } from '../errors.js';
import { SEVERITY_RANK, type Severity } from '../vocabulary.js';
import { alertId, type AlertState } from './types.js';

export interface Ack {
  id: number;
  /** The alert (`rule\0serial`, src/alerts/types.ts alertKey). */
  key: string;
  rule: string;
  serial: string;
  /** The firing episode acknowledged: the alert's `firingSince` at the time. */
  firingSince: number;
  /** The alert's severity when acknowledged: a higher one ends the ack. */
  severity: Severity;
  /** Who: `--by`, $USER, or the API's `by`. */
  by: string;
  comment: string;
  at: number;
  /** When it ends by itself; null: when the alert resolves. */
  until: number | null;
}

/** What the engine and the views read of the acks, and the writes of `boxwatch ack` and the API. */
export interface AckRepository {
  /** Records an ack; returns it with its id. */
  add(ack: Omit<Ack, 'id'>): Awaitable<Ack>;
  /** The latest ack of each alert given, by key (an older ack of the same alert is superseded). */
  latestByKey(): Awaitable<Map<string, Ack>>;
  /** Acks given since `since`, newest first (the history). */
  since(since: number): Awaitable<Ack[]>;
}

/** True when `ack` still holds back the repeats of the alert in `state` at `now`. */
export function ackInEffect(ack: Ack | undefined, state: Pick<AlertState, 'status' | 'firingSince' | 'severity'>, now: number): ack is Ack {
  if (ack === undefined) return false;
  return (
    state.status === 'firing' &&
    state.firingSince === ack.firingSince &&
    SEVERITY_RANK[state.severity] <= SEVERITY_RANK[ack.severity] &&
    (ack.until === null || now < ack.until)
  );
}

/**
 * The ack a message about this alert shows: the one in effect, or, for the resolve of an
 * acknowledged episode, the ack of that episode (so "resolved, acknowledged by alice" is told).
 */
export function ackOfEpisode(ack: Ack | undefined, firingSince: number | null): Ack | undefined {
  return ack !== undefined && firingSince !== null && ack.firingSince === firingSince ? ack : undefined;
}

/** Each state with the ack in effect for it (null: none): what status, alerts and the API show. */
export function withAcks<T extends AlertState>(states: Iterable<T>, acks: ReadonlyMap<string, Ack>, now: number): (T & { ack: Ack | null })[] {
  return [...states].map((s) => {
    const ack = acks.get(s.key);
    return { ...s, ack: ackInEffect(ack, s, now) ? ack : null };
  });
}

/** An acknowledgement as asked for: by `boxwatch ack` (options) or `POST /api/acks` (body). */
export interface AckRequest {
  /**
   * The alert's printable id, `rule/serial` (the rule alone for a gateway alert), with the box
   * named as in other commands (`findAlert`); or, with `box`, the rule alone.
   */
  alert: string;
  /** The box, as `boxwatch alerts` shows it or as other commands take it (see `findAlert`). */
  box?: string;
  comment?: string;
  /** How long (`4h`); absent: until the alert resolves. */
  for?: string;
  by: string;
}

/**
 * Checks an ack request against the alerts now; returns the ack to store (without id). Throws a
 * UsageError naming the bad option (the API answers it as a 400): no comment, a bad duration, an
 * alert that is unknown or not firing (only a firing alert repeats).
 */
export function ackFromRequest(request: AckRequest, states: Iterable<AlertState>, now: number): Omit<Ack, 'id'> {
  const comment = request.comment?.trim() ?? '';
  if (comment === '') throw new UsageError('--comment is required (what is being done about it)');
  let until: number | null = null;
  if (request.for !== undefined) {
    const read = readDuration(request.for, { min: 1 });
    if (!read.ok) throw new UsageError(`--for: ${read.message}`);
    until = now + read.ms;
  }
  const all = [...states];
  const state = findAlert(request.alert, request.box, all);
  const asked = request.box === undefined ? request.alert : `${request.alert} ${request.box}`;
  const firing = all.filter((s) => s.status === 'firing').map((s) => alertId(s.rule, s.serial));
  const known = firing.length > 0 ? ` (firing: ${firing.slice(0, 10).join(', ')}${firing.length > 10 ? ', ...' : ''})` : ' (no alert is firing)';
  if (state === undefined) throw new UsageError(`no alert "${asked}"${known}`);
  if (state.status !== 'firing' || state.firingSince === null) throw new UsageError(`alert "${alertId(state.rule, state.serial)}" is ${state.status}, not firing: only a firing alert can be acknowledged`);
  const by = request.by.trim();
  return { key: state.key, rule: state.rule, serial: state.serial, firingSince: state.firingSince, severity: state.severity, by: by === '' ? 'unknown' : by, comment, at: now, until };
}

/**
 * The alert that `alert` (and `box`) name among `states`: its id as `boxwatch alerts` shows it
 * (`box-offline/acme/BX-00001`, `gateway_unreachable`), or the rule and its box, given as one
 * `RULE/BOX` or as `RULE` and `box`. The box is resolved as every command resolves one
 * (src/box-id.ts `resolveBoxId`): `ACCOUNT/SERIAL`, or a bare serial one account's box has among
 * the rule's alerts (several: a UsageError naming them); `gateway` or an account's name names a
 * gateway or fleet alert (`gateway (acme)` as shown works too). Undefined when none matches.
 */
export function findAlert(alert: string, box: string | undefined, states: readonly AlertState[]): AlertState | undefined {
  if (box === undefined) {
    const exact = states.find((s) => alertId(s.rule, s.serial) === alert);
    if (exact !== undefined) return exact;
  }
  const slash = alert.indexOf('/');
  const rule = box !== undefined || slash < 0 ? alert : alert.slice(0, slash);
  const input = box ?? (slash < 0 ? '' : alert.slice(slash + 1));
  const ofRule = new Map(states.filter((s) => s.rule === rule).map((s) => [s.serial, s]));
  const shown = /^gateway \(([^)]*)\)$/.exec(input)?.[1];
  const fleet = input === 'gateway' || input === '' ? '' : fleetKey(shown ?? input);
  if (ofRule.has(fleet)) return ofRule.get(fleet);
  const found = resolveBoxId(input, [...ofRule.keys()].filter((k) => !isFleetKey(k)));
  if (found.kind === 'ambiguous') throw new UsageError(ambiguityMessage(input, found.candidates));
  return found.kind === 'found' ? ofRule.get(found.key) : undefined;
}
