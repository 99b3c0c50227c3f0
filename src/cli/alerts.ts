/**
 * `boxwatch alerts [--active] [--since 7d] [--format table|json]`: the alerts open now (pending,
 * firing, resolved-but-not-yet-at-rest) and those that changed within `--since`, with their
 * transitions. For open alerts the HELD BACK column says why they are not notified right now
 * (silence, inhibition, gateway down), computed with the engine's own functions.
 */
import type { Command } from 'commander';
import { inhibitedBy, matchingSilences, type AlertState, type AlertStatus, type AlertValue, type HeldBackReason, type Severity } from '../alerts/index.js';
import { SEVERITY_RANK } from '../alerts/types.js';
import { formatDuration } from '../duration.js';
import type { AlertQueries, TransitionRow } from '../alerts/repositories.js';
import type { BoxState, Store } from '../store/types.js';
import type { Config } from '../config/index.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, formatTable, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { parseRange, relativeTime } from './time-range.js';

interface AlertsOptions {
  active?: boolean;
  since?: string;
  format: OutputFormat;
  config?: string;
  db?: string;
}

/** Why an open alert is not notified now. */
export interface HeldBackNow {
  reason: HeldBackReason;
  /** Silence ids or inhibiting alert keys (rule names are shown). */
  by: string[];
}

/** One alert as `boxwatch alerts` shows it. */
export interface AlertView {
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
  since: number;
  firingSince: number | null;
  resolvedAt: number | null;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
  heldBack: HeldBackNow | null;
  /** Transitions within the window, oldest first. */
  transitions: TransitionRow[];
}

const STATE_ORDER: Record<AlertStatus, number> = { firing: 0, pending: 1, resolved: 2, inactive: 3 };
const KEY_SEP = '\u0000';

/** Builds the alert list from the stored states, transitions since `from`, boxes and silences. */
export function alertViews(
  input: { states: ReadonlyMap<string, AlertState>; transitions: readonly TransitionRow[]; boxes: readonly BoxState[]; alerts: Pick<AlertQueries, 'silences'>; gatewayDown: boolean; inhibit: boolean; kinds: ReadonlyMap<string, string> },
  now: number,
): AlertView[] {
  const { states, transitions } = input;
  const names = new Map(input.boxes.map((b) => [b.serial, b.name]));
  const byKey = new Map<string, TransitionRow[]>();
  for (const t of transitions) {
    const key = `${t.rule}${KEY_SEP}${t.serial}`;
    const list = byKey.get(key);
    if (list) list.push(t);
    else byKey.set(key, [t]);
  }
  const silences = input.alerts.silences(now);
  const inhibited = input.inhibit ? inhibitedBy(states.values()) : new Map<string, string[]>();
  const views: AlertView[] = [];
  const seen = new Set<string>();
  for (const s of states.values()) {
    const key = `${s.rule}${KEY_SEP}${s.serial}`;
    seen.add(key);
    views.push({
      rule: s.rule,
      kind: s.kind,
      severity: s.severity,
      serial: s.serial,
      name: names.get(s.serial) ?? null,
      state: s.status,
      open: s.status === 'pending' || s.status === 'firing',
      since: s.since,
      firingSince: s.firingSince,
      resolvedAt: s.resolvedAt,
      value: s.value,
      threshold: s.threshold,
      summary: s.summary,
      heldBack: heldBackNow(s, { silences: matchingSilences(s, silences, now), inhibitedBy: inhibited.get(s.key), gatewayDown: input.gatewayDown }),
      transitions: byKey.get(key) ?? [],
    });
  }
  for (const [key, list] of byKey) {
    if (seen.has(key)) continue;
    const last = list[list.length - 1] as TransitionRow;
    const lastResolved = [...list].reverse().find((t) => t.to === 'resolved');
    views.push({
      rule: last.rule,
      kind: input.kinds.get(last.rule) ?? '',
      severity: last.severity,
      serial: last.serial,
      name: names.get(last.serial) ?? null,
      state: lastResolved ? 'resolved' : 'inactive',
      open: false,
      since: lastResolved ? lastResolved.at : last.at,
      firingSince: [...list].reverse().find((t) => t.to === 'firing')?.at ?? null,
      resolvedAt: lastResolved?.at ?? null,
      value: last.value,
      threshold: last.threshold,
      summary: last.summary,
      heldBack: null,
      transitions: list,
    });
  }
  return views.sort(
    (a, b) =>
      STATE_ORDER[a.state] - STATE_ORDER[b.state] ||
      SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] ||
      b.since - a.since ||
      a.rule.localeCompare(b.rule) ||
      a.serial.localeCompare(b.serial),
  );
}

function heldBackNow(s: AlertState, why: { silences: string[]; inhibitedBy: string[] | undefined; gatewayDown: boolean }): HeldBackNow | null {
  if (s.status !== 'firing' && s.status !== 'pending' && !s.notifiedFiring) return null;
  if (why.gatewayDown && s.serial !== '') return { reason: 'gateway_down', by: [] };
  if (why.silences.length > 0) return { reason: 'silenced', by: why.silences };
  if (why.inhibitedBy !== undefined) return { reason: 'inhibited', by: why.inhibitedBy };
  return null;
}

/** `silenced (ab12cd34)`, `inhibited by box-offline`, `gateway down`. */
export function heldBackText(reason: HeldBackReason | null, by: readonly string[]): string {
  switch (reason) {
    case null:
      return '';
    case 'gateway_down':
      return 'gateway down';
    case 'silenced':
      return by.length > 0 ? `silenced (${by.join(', ')})` : 'silenced';
    case 'inhibited':
      return by.length > 0 ? `inhibited by ${by.map((k) => k.split(KEY_SEP)[0]).join(', ')}` : 'inhibited';
  }
}

/** A value with the unit its rule kind implies: `12%`, `-110 dBm`, `20m` (stale age in seconds). */
export function valueText(kind: string, value: AlertValue): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'number') {
    if (kind === 'low_battery') return `${value}%`;
    if (kind === 'weak_signal') return `${value} dBm`;
    if (kind === 'stale') return formatDuration(value * 1000);
  }
  return terminalSafe(String(value));
}

const boxText = (serial: string): string => (serial === '' ? '(gateway)' : terminalSafe(serial));
const iso = (t: number): string => new Date(t).toISOString();
/** ISO 8601 to the second, for tables. */
const short = (t: number): string => iso(t).replace(/\.\d{3}Z$/, 'Z');
const isoOrNull = (t: number | null): string | null => (t === null ? null : iso(t));

function toJson(v: AlertView): Record<string, unknown> {
  return {
    rule: v.rule,
    kind: v.kind,
    severity: v.severity,
    box: v.serial === '' ? null : v.serial,
    name: v.name,
    state: v.state,
    open: v.open,
    since: iso(v.since),
    firingSince: isoOrNull(v.firingSince),
    resolvedAt: isoOrNull(v.resolvedAt),
    value: v.value,
    threshold: v.threshold,
    summary: v.summary,
    heldBack: v.heldBack,
    transitions: v.transitions.map((t) => ({
      id: t.id,
      at: iso(t.at),
      from: t.from,
      to: t.to,
      value: t.value,
      threshold: t.threshold,
      summary: t.summary,
      heldBack: t.heldBack,
      heldBy: t.heldBy,
    })),
  };
}

/** Prints the alert list (and, with `showTransitions`, the transitions) as a table or JSON. */
export function printAlerts(ctx: CliContext, views: readonly AlertView[], options: { format: OutputFormat; now: number; from: number; showTransitions: boolean; active: boolean }): void {
  const { now } = options;
  if (options.format === 'json') {
    ctx.out(JSON.stringify({ now: iso(now), since: iso(options.from), alerts: views.map(toJson) }, null, 2) + '\n');
    return;
  }
  if (views.length === 0) {
    ctx.out(options.active ? 'no active alerts\n' : `no alerts since ${short(options.from)}\n`);
    return;
  }
  ctx.out(
    formatTable(
      ['STATE', 'RULE', 'SEVERITY', 'BOX', 'NAME', 'SINCE', 'VALUE', 'SUMMARY', 'HELD BACK'],
      views.map((v) => [
        v.state,
        v.rule,
        v.severity,
        boxText(v.serial),
        v.name === null ? '' : terminalSafe(v.name),
        relativeTime(v.since, now),
        valueText(v.kind, v.value),
        terminalSafe(v.summary ?? ''),
        heldBackText(v.heldBack?.reason ?? null, v.heldBack?.by ?? []),
      ]),
    ),
  );
  if (!options.showTransitions) return;
  const kindOf = new Map(views.map((v) => [`${v.rule}${KEY_SEP}${v.serial}`, v.kind]));
  const rows = views
    .flatMap((v) => v.transitions)
    .sort((a, b) => a.at - b.at || a.id - b.id)
    .map((t) => [
      short(t.at),
      t.rule,
      boxText(t.serial),
      `${t.from} -> ${t.to}`,
      valueText(kindOf.get(`${t.rule}${KEY_SEP}${t.serial}`) ?? '', t.value),
      terminalSafe(t.summary ?? ''),
      heldBackText(t.heldBack, t.heldBy),
    ]);
  ctx.out(`\ntransitions since ${short(options.from)}:\n`);
  ctx.out(rows.length === 0 ? '(none)\n' : formatTable(['TIME', 'RULE', 'BOX', 'CHANGE', 'VALUE', 'SUMMARY', 'HELD BACK'], rows));
}

/** Reads everything `boxwatch alerts` shows from an open store. */
export function readAlertViews(store: Store, alerts: AlertQueries, config: Config | null, from: number, now: number): AlertView[] {
  const states = alerts.states();
  const transitions = alerts.transitionsSince(from);
  const last = store.lastCycle();
  const kinds = new Map<string, string>((config?.rules ?? []).map((r) => [r.name, r.kind]));
  for (const s of states.values()) kinds.set(s.rule, s.kind);
  for (const name of ['gateway_unreachable', 'gateway_unauthorized', 'gateway_schema']) kinds.set(name, name);
  return alertViews(
    { states, transitions, boxes: store.boxes(), alerts, gatewayDown: last?.outcome === 'failed', inhibit: config?.alerting.inhibit ?? true, kinds },
    now,
  );
}

export const registerAlerts: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('alerts')
    .description('current and past alerts with their transitions')
    .option('--active', 'only alerts pending or firing now')
    .option('--since <duration>', 'how far back to look for past alerts and transitions, e.g. 24h (default 7d; given explicitly, the table lists the transitions too)')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: AlertsOptions) =>
      withStore(opts, ctx, (store, now, { alerts, config }) => {
        const { from } = parseRange({ since: opts.since }, now, '7d');
        let views = readAlertViews(store, alerts, config, from, now);
        if (opts.active) views = views.filter((v) => v.open);
        printAlerts(ctx, views, { format: opts.format, now, from, showTransitions: opts.since !== undefined, active: opts.active === true });
      }),
    );
};
