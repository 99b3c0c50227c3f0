/**
 * The alert view: one alert as people and programs see it (`boxwatch alerts`, `/api/alerts`, the
 * dashboard), built by one function, `alertViews`, and written as JSON by one, `alertJson`.
 *
 * Read side only: it reads what the pipeline stored (alert states, transitions, silences, boxes,
 * the last cycle) and never writes. What is "held back" comes from the pipeline's own hold-back
 * stage (src/alerts/hold-back.ts), so the view shows what the daemon decides.
 *
 * In JSON every time is ISO 8601 UTC and an alert is named by a printable id, `rule/serial`
 * (`firmware/BX-00033`), or the rule alone for the gateway alerts.
 */
import { DEFAULT_ACCOUNT, groupByAccount, isFleetKey } from '../box-id.js';
import type { Awaitable } from '../awaitable.js';
import { ackInEffect, type Ack, type AckRepository } from '../alerts/acks.js';
import { holdBack, type HeldBack } from '../alerts/hold-back.js';
import { ackJson, type AckJson } from './acks.js';
import type { Silence } from '../alerts/silences.js';
import { alertId, parseAlertKey, type AlertState, type AlertStatus, type AlertValue, type HeldBackReason, type Transition } from '../alerts/types.js';
import { isoTime, isoOrNull } from '../time-format.js';
import { GATEWAY_RULES, SEVERITY_RANK, type Severity } from '../vocabulary.js';
import { deliveriesOf, readNotificationViews, type Delivery, type NotificationSource, type NotificationStatus } from './notifications.js';
import { isGatewayDown } from '../alerts/gateway.js';

/** A stored transition (an alert-history row). */
export interface TransitionRecord extends Transition {
  id: number;
}

/** One alert as shown. Times are ms here; alertJson writes them as ISO strings. */
export interface AlertView {
  /** Printable id: `rule/serial`, or the rule alone for a gateway alert. */
  id: string;
  rule: string;
  kind: string;
  severity: Severity;
  /** Box serial; '' for the gateway alerts. */
  serial: string;
  name: string | null;
  /** The current status; `resolved` also for alerts that came to rest after firing in the window. */
  state: AlertStatus;
  /** True while pending or firing. */
  open: boolean;
  /** When the current state was entered. */
  since: number;
  firingSince: number | null;
  resolvedAt: number | null;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
  /** Why it is not notified now (only for alerts that are open or owe a notification). */
  heldBack: HeldBack | null;
  /** Transitions within the window, oldest first. */
  transitions: TransitionRecord[];
  /** Where its latest notification in the window went, per notifier (the notification log). */
  deliveries: Delivery[];
  /** The acknowledgement in effect (src/alerts/acks.ts), or null. */
  ack: Ack | null;
}

/** What the alert view reads. */
export interface AlertViewInput {
  /** Stored alert states (not at rest), by key. */
  states: ReadonlyMap<string, AlertState>;
  /** Transitions of the window, oldest first. */
  transitions: readonly TransitionRecord[];
  /** Box names by serial. */
  boxes: readonly { serial: string; name: string }[];
  silences: readonly Silence[];
  /** The last cycle failed. */
  gatewayDown: boolean;
  /** With several accounts: those whose last cycle failed (instead of `gatewayDown`, per alert's account). */
  downAccounts?: ReadonlySet<string>;
  /** `alerting.inhibit`. */
  inhibit: boolean;
  /** Rule kinds by rule name, for alerts that came to rest (their state row is gone). */
  kinds: ReadonlyMap<string, string>;
  /** Per alert id, where it was notified (src/views/notifications.ts); none when absent. */
  deliveries?: ReadonlyMap<string, Delivery[]>;
  /** The latest ack of each alert, by key; none when absent. */
  acks?: ReadonlyMap<string, Ack>;
}

export { alertId };

/** The printable id for an alert key (`rule\0serial`). */
export function alertIdOfKey(key: string): string {
  const { rule, serial } = parseAlertKey(key);
  return alertId(rule, serial);
}

const ackOrNull = (ack: Ack | undefined, s: AlertState, now: number): Ack | null => (ackInEffect(ack, s, now) ? ack : null);

/** Builds the views of the alerts open now and of those with transitions in the window. */
export function alertViews(input: AlertViewInput, now: number): AlertView[] {
  const { states } = input;
  const names = new Map(input.boxes.map((b) => [b.serial, b.name]));
  const byKey = new Map<string, TransitionRecord[]>();
  for (const t of input.transitions) {
    const list = byKey.get(t.key);
    if (list) list.push(t);
    else byKey.set(t.key, [t]);
  }
  const heldBack = heldBackOf(input, now);
  const views: AlertView[] = [];
  for (const s of states.values()) {
    const open = s.status === 'pending' || s.status === 'firing';
    views.push({
      id: alertId(s.rule, s.serial),
      rule: s.rule,
      kind: s.kind,
      severity: s.severity,
      serial: s.serial,
      name: names.get(s.serial) ?? null,
      state: s.status,
      open,
      since: s.since,
      firingSince: s.firingSince,
      resolvedAt: s.resolvedAt,
      value: s.value,
      threshold: s.threshold,
      summary: s.summary,
      // Held back matters only for an alert that is open or still owes its resolved message.
      heldBack: open || s.notifiedFiring ? (heldBack.get(s.key) ?? null) : null,
      transitions: byKey.get(s.key) ?? [],
      deliveries: input.deliveries?.get(alertId(s.rule, s.serial)) ?? [],
      ack: ackOrNull(input.acks?.get(s.key), s, now),
    });
  }
  for (const [key, list] of byKey) {
    if (states.has(key)) continue;
    const last = list[list.length - 1] as TransitionRecord;
    const lastResolved = list.findLast((t) => t.to === 'resolved');
    views.push({
      id: alertId(last.rule, last.serial),
      rule: last.rule,
      kind: input.kinds.get(last.rule) ?? last.kind,
      severity: last.severity,
      serial: last.serial,
      name: names.get(last.serial) ?? null,
      state: lastResolved ? 'resolved' : 'inactive',
      open: false,
      since: lastResolved ? lastResolved.at : last.at,
      firingSince: list.findLast((t) => t.to === 'firing')?.at ?? null,
      resolvedAt: lastResolved?.at ?? null,
      value: last.value,
      threshold: last.threshold,
      summary: last.summary,
      heldBack: null,
      transitions: list,
      deliveries: input.deliveries?.get(alertId(last.rule, last.serial)) ?? [],
      ack: null,
    });
  }
  return views.sort(byUrgency);
}

const STATE_ORDER: Record<AlertStatus, number> = { firing: 0, pending: 1, resolved: 2, inactive: 3 };

/** `boxwatch alerts`' order: firing, pending, resolved; most severe first; then newest first. */
export function byUrgency(a: AlertView, b: AlertView): number {
  return (
    STATE_ORDER[a.state] - STATE_ORDER[b.state] ||
    SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] ||
    b.since - a.since ||
    a.rule.localeCompare(b.rule) ||
    a.serial.localeCompare(b.serial)
  );
}

/** `/api/alerts`' order: the latest change (entering the current state) first. */
export function newestFirst(a: AlertView, b: AlertView): number {
  return b.since - a.since || a.rule.localeCompare(b.rule) || a.serial.localeCompare(b.serial);
}

export interface HeldBackJson {
  reason: HeldBackReason;
  /** Silence ids, or the ids (`rule/serial`) of the inhibiting alerts. */
  by: string[];
}

function heldBackJson(reason: HeldBackReason | null, by: readonly string[]): HeldBackJson | null {
  if (reason === null) return null;
  return { reason, by: reason === 'inhibited' ? by.map(alertIdOfKey) : [...by] };
}

export interface TransitionJson {
  id: number;
  /** The alert's printable id. */
  alert: string;
  rule: string;
  box: string | null;
  severity: Severity;
  from: AlertStatus;
  to: AlertStatus;
  at: string;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
  heldBack: HeldBackReason | null;
  /** Silence ids, or the ids of the inhibiting alerts. */
  heldBy: string[];
}

export function transitionJson(t: TransitionRecord): TransitionJson {
  return {
    id: t.id,
    alert: alertId(t.rule, t.serial),
    rule: t.rule,
    box: isFleetKey(t.serial) ? null : t.serial,
    severity: t.severity,
    from: t.from,
    to: t.to,
    at: isoTime(t.at),
    value: t.value,
    threshold: t.threshold,
    summary: t.summary,
    heldBack: t.heldBack,
    heldBy: heldBackJson(t.heldBack, t.heldBy)?.by ?? [],
  };
}

export interface AlertJson {
  id: string;
  rule: string;
  kind: string;
  severity: Severity;
  box: string | null;
  name: string | null;
  state: AlertStatus;
  open: boolean;
  since: string;
  firingSince: string | null;
  resolvedAt: string | null;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
  heldBack: HeldBackJson | null;
  transitions: TransitionJson[];
  /** Where its latest notification in the window went: per notifier, its status and time. */
  deliveries: { notifier: string; status: NotificationStatus; at: string }[];
  /** The acknowledgement in effect, or null. */
  ack: AckJson | null;
}

/** The alert view as JSON: the one shape of `boxwatch alerts --format json` and `/api/alerts`. */
export function alertJson(v: AlertView): AlertJson {
  return {
    id: v.id,
    rule: v.rule,
    kind: v.kind,
    severity: v.severity,
    box: isFleetKey(v.serial) ? null : v.serial,
    name: v.name,
    state: v.state,
    open: v.open,
    since: isoTime(v.since),
    firingSince: isoOrNull(v.firingSince),
    resolvedAt: isoOrNull(v.resolvedAt),
    value: v.value,
    threshold: v.threshold,
    summary: v.summary,
    heldBack: heldBackJson(v.heldBack?.reason ?? null, v.heldBack?.by ?? []),
    transitions: v.transitions.map(transitionJson),
    deliveries: v.deliveries.map((d) => ({ notifier: d.notifier, status: d.status, at: isoTime(d.at) })),
    ack: v.ack === null ? null : ackJson(v.ack),
  };
}

/** What holds each alert back now; with several accounts a gateway outage holds back only its account's alerts. */
function heldBackOf(input: AlertViewInput, now: number): ReturnType<typeof holdBack> {
  const ctx = { now, silences: input.silences, inhibit: input.inhibit };
  const down = input.downAccounts;
  if (down === undefined) return holdBack(input.states.values(), { ...ctx, gatewayDown: input.gatewayDown });
  const out: ReturnType<typeof holdBack> = new Map();
  for (const [account, list] of groupByAccount(input.states.values(), (s) => s.serial)) for (const [key, held] of holdBack(list, { ...ctx, gatewayDown: down.has(account) })) out.set(key, held);
  return out;
}

/** Where the alert view's inputs come from: the store's boxes and cycles, the alert tables, the outbox. */
export interface AlertViewSource extends NotificationSource {
  boxes(): Awaitable<readonly { serial: string; name: string }[]>;
  lastCycle(): Awaitable<{ outcome: 'ok' | 'failed' } | undefined>;
  /** The latest cycle of each account (absent: judged by lastCycle alone). */
  lastCycles?(): Awaitable<readonly { outcome: 'ok' | 'failed'; account?: string }[]>;
  states(): Awaitable<ReadonlyMap<string, AlertState>>;
  transitionsSince(since: number): Awaitable<readonly TransitionRecord[]>;
  silences(now: number): Awaitable<readonly Silence[]>;
  /** The latest ack of each alert, by key (absent: no acks read). */
  acks?(): Awaitable<ReadonlyMap<string, Ack>>;
}

/** What the view needs of the configuration (null: read without one, e.g. `--db`). */
export interface AlertViewConfig {
  rules: readonly { name: string; kind: string }[];
  alerting: { inhibit: boolean };
}

export interface AlertQuery {
  /** Transitions (and alerts that came to rest) from here on. */
  from: number;
  /** Only alerts pending or firing now. */
  activeOnly?: boolean;
  /** Only alerts that entered their current state at or after this time. */
  changedSince?: number;
}

/** Reads and builds the alert views: the one path for the CLI, the API and the dashboard. */
export async function readAlertViews(source: AlertViewSource, config: AlertViewConfig | null, query: AlertQuery, now: number): Promise<AlertView[]> {
  const states = await source.states();
  const lastCycle = await source.lastCycle();
  const kinds = new Map<string, string>((config?.rules ?? []).map((r) => [r.name, r.kind]));
  for (const name of GATEWAY_RULES) kinds.set(name, name);
  const views = alertViews(
    {
      states,
      transitions: await source.transitionsSince(query.from),
      boxes: await source.boxes(),
      silences: await source.silences(now),
      gatewayDown: lastCycle !== undefined && isGatewayDown(lastCycle),
      ...(await downAccountsOf(source)),
      inhibit: config?.alerting.inhibit ?? true,
      kinds,
      deliveries: deliveriesOf(await readNotificationViews(source, { since: query.from })),
      acks: await source.acks?.(),
    },
    now,
  );
  const { activeOnly = false, changedSince } = query;
  return views.filter((v) => (!activeOnly || v.open) && (changedSince === undefined || v.since >= changedSince));
}

/** With cycles of several accounts, the accounts whose last cycle failed; else nothing (gatewayDown says it). */
async function downAccountsOf(source: AlertViewSource): Promise<{ downAccounts?: ReadonlySet<string> }> {
  const last = (await source.lastCycles?.()) ?? [];
  if (last.length < 2) return {};
  return { downAccounts: new Set(last.filter(isGatewayDown).map((c) => c.account ?? DEFAULT_ACCOUNT)) };
}

/** The alert view's source over a store and its alert tables. */
export function alertViewSource(
  store: Pick<AlertViewSource, 'boxes' | 'lastCycle'> & Partial<Pick<AlertViewSource, 'lastCycles'>>,
  alerts: Pick<AlertViewSource, 'states' | 'transitionsSince' | 'silences' | 'outboxSince'>,
  acks?: Pick<AckRepository, 'latestByKey'>,
): AlertViewSource {
  const lastCycles = store.lastCycles?.bind(store);
  return {
    ...(acks ? { acks: () => acks.latestByKey() } : {}),
    outboxSince: (since) => alerts.outboxSince(since),
    boxes: () => store.boxes(),
    lastCycle: () => store.lastCycle(),
    ...(lastCycles ? { lastCycles } : {}),
    states: () => alerts.states(),
    transitionsSince: (since) => alerts.transitionsSince(since),
    silences: (now) => alerts.silences(now),
  };
}
