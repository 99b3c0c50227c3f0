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
  /** The alert's printable id, `rule/serial` (the rule alone for a gateway alert). */
  alert: string;
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
  const state = all.find((s) => alertId(s.rule, s.serial) === request.alert);
  const firing = all.filter((s) => s.status === 'firing').map((s) => alertId(s.rule, s.serial));
  const known = firing.length > 0 ? ` (firing: ${firing.slice(0, 10).join(', ')}${firing.length > 10 ? ', ...' : ''})` : ' (no alert is firing)';
  if (state === undefined) throw new UsageError(`no alert "${request.alert}"${known}`);
  if (state.status !== 'firing' || state.firingSince === null) throw new UsageError(`alert "${request.alert}" is ${state.status}, not firing: only a firing alert can be acknowledged`);
  const by = request.by.trim();
  return { key: state.key, rule: state.rule, serial: state.serial, firingSince: state.firingSince, severity: state.severity, by: by === '' ? 'unknown' : by, comment, at: now, until };
}
