/**
 * The box view: one box as people and programs see it (`boxwatch status`, `/api/boxes`,
 * `/api/boxes/:serial`, the dashboard's overview), built by `boxView` and ordered by
 * `sortByTrouble`. Read side only: the stored box state plus its open alerts.
 *
 * A box's `state` is one word: `missing` (gone from the gateway's device list: its last reported
 * `connected` is history, not news), `offline` (disconnected), `stale` (says connected, but its
 * last_seen is older than the stale threshold), else `online`. In JSON every time is ISO 8601 UTC.
 */
import type { Ack } from '../alerts/acks.js';
import { ackJson, type AckJson } from './acks.js';
import type { AlertState, AlertStatus } from '../alerts/types.js';
import type { BoxState } from '../domain/store.js';
import { isoOrNull, isoTime } from '../time-format.js';
import { SEVERITY_RANK, type Severity } from '../vocabulary.js';

export type BoxCondition = 'online' | 'offline' | 'stale' | 'missing';
export const BOX_CONDITIONS: readonly BoxCondition[] = ['online', 'offline', 'stale', 'missing'];

/** The stale threshold when no `stale` rule is configured. */
export const DEFAULT_STALE_AFTER_MS = 15 * 60_000;

/** missing, offline, stale (last_seen older than `staleAfterMs`), else online. */
export function boxCondition(b: BoxState, now: number, staleAfterMs: number): BoxCondition {
  if (b.missingSince !== null) return 'missing';
  if (!b.connected) return 'offline';
  return now - b.lastSeen > staleAfterMs ? 'stale' : 'online';
}

/** The first `stale` rule's max_age; 15 minutes without one. */
export function staleAfterMs(config: { rules: readonly ({ kind: string } & Partial<{ maxAge: number }>)[] } | null): number {
  const rule = config?.rules.find((r) => r.kind === 'stale');
  return rule?.maxAge ?? DEFAULT_STALE_AFTER_MS;
}

/** The stored box as JSON (ISO times). */
export interface BoxJson {
  /** The box's id: its serial, `ACCOUNT/SERIAL` outside the account "default" (src/box-id.ts). */
  serial: string;
  /** The account the box belongs to (`default` for a single `gateway:`). */
  account: string;
  id: number;
  name: string;
  /** As last reported by the gateway (for a missing box: before it went missing). */
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
    account: b.account,
    id: b.id,
    name: b.name,
    connected: b.connected,
    battery: b.battery,
    signal: b.signal,
    firmware: b.firmware,
    lastSeen: isoTime(b.lastSeen),
    registeredAt: isoOrNull(b.registeredAt),
    location: b.location,
    ip: b.ip,
    detailsAt: isoOrNull(b.detailsAt),
    firstSeen: isoTime(b.firstSeen),
    lastPolled: isoTime(b.lastPolled),
    missingSince: isoOrNull(b.missingSince),
  };
}

/** An open alert of a box as the box view lists it. */
export interface BoxAlertJson {
  rule: string;
  severity: Severity;
  status: AlertStatus;
  since: string;
  summary: string | null;
  /** The acknowledgement in effect (null: none, or not read). */
  ack: AckJson | null;
}

/** An open alert of a box; `ack` when the caller read the acks (src/alerts/acks.ts withAcks). */
export function boxAlertJson(a: AlertState & { ack?: Ack | null }): BoxAlertJson {
  return { rule: a.rule, severity: a.severity, status: a.status, since: isoTime(a.since), summary: a.summary, ack: a.ack ? ackJson(a.ack) : null };
}

/** The box view: the stored box, its one-word state and its open alerts (firing, most severe first). */
export interface BoxView {
  box: BoxState;
  state: BoxCondition;
  alerts: readonly AlertState[];
}

export function boxView(box: BoxState, openAlerts: readonly AlertState[], now: number, staleMs: number): BoxView {
  return { box, state: boxCondition(box, now, staleMs), alerts: openAlerts };
}

/** The box view as JSON: the one shape of `status --format json`, `/api/boxes` and the overview rows. */
export interface BoxViewJson extends BoxJson {
  state: BoxCondition;
  alerts: BoxAlertJson[];
}

export function boxViewJson(v: BoxView): BoxViewJson {
  return { ...boxJson(v.box), state: v.state, alerts: v.alerts.map(boxAlertJson) };
}

/** Lower is worse: missing, disconnected, low battery, weak signal, fine. */
export function troubleRank(box: BoxState): number {
  if (box.missingSince !== null) return 0;
  if (!box.connected) return 1;
  if (box.battery !== null && box.battery < 20) return 2;
  if (box.signal !== null && box.signal < -105) return 3;
  return 4;
}

/** Open (pending or firing) alerts by box serial ('' = gateway alerts), firing and most severe first. */
export function openAlertsBySerial(states: Iterable<AlertState>): Map<string, AlertState[]> {
  const map = new Map<string, AlertState[]>();
  for (const s of states) {
    if (s.status !== 'firing' && s.status !== 'pending') continue;
    const list = map.get(s.serial);
    if (list) list.push(s);
    else map.set(s.serial, [s]);
  }
  for (const list of map.values()) {
    list.sort((a, b) => Number(b.status === 'firing') - Number(a.status === 'firing') || SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] || a.rule.localeCompare(b.rule));
  }
  return map;
}

/** The most severe firing alert of a box (0 when none): boxes with firing alerts sort first. */
function firingRank(alerts: readonly AlertState[] | undefined): number {
  return Math.max(0, ...(alerts ?? []).filter((a) => a.status === 'firing').map((a) => SEVERITY_RANK[a.severity]));
}

/** Trouble first: the most severe firing alert, then troubleRank, then lowest battery, then serial. */
export function sortByTrouble(boxes: readonly BoxState[], alerts: ReadonlyMap<string, AlertState[]> = new Map()): BoxState[] {
  return [...boxes].sort(
    (a, b) =>
      firingRank(alerts.get(b.serial)) - firingRank(alerts.get(a.serial)) ||
      troubleRank(a) - troubleRank(b) ||
      (a.battery ?? 101) - (b.battery ?? 101) ||
      a.serial.localeCompare(b.serial),
  );
}

/** Every box's view, trouble first. */
export function boxViews(boxes: readonly BoxState[], states: Iterable<AlertState>, now: number, staleMs: number): BoxView[] {
  const open = openAlertsBySerial(states);
  return sortByTrouble(boxes, open).map((b) => boxView(b, open.get(b.serial) ?? [], now, staleMs));
}
