/**
 * The JSON API: box state, metric history and alerts, with ISO 8601 times; and what the dashboard
 * reads (overview, gateway, uptime, firmware, notifications, silences) and writes (silences).
 * Query parameters are checked strictly; a bad one is a 400 that names it.
 */
import { z } from 'zod';
import type { Awaitable } from '../awaitable.js';
import { ackFromRequest, withAcks, type AckRepository } from '../alerts/acks.js';
import { openAlertsMatching } from '../alerts/silences.js';
import { ackJson } from '../views/acks.js';
import { SEVERITY_RANK, type AlertState, type Severity } from '../alerts/types.js';
import { silenceFromOptions, silenceJson } from '../views/silences.js';
import { BOX_CONDITIONS, boxAlertJson, boxCondition, boxView, boxViews, DEFAULT_STALE_AFTER_MS, openAlertsBySerial, sortByTrouble, staleAfterMs, type BoxCondition, type BoxViewJson, boxViewJson } from '../views/boxes.js';
import { transitionJson } from '../views/alerts.js';
import { historyResultJson, type HistoryJson } from '../views/history.js';
import { NOTIFICATION_STATUSES, notificationJson, readNotificationViews } from '../views/notifications.js';
import { notifierSecrets } from '../notify/from-config.js';
import type { Config } from '../config/index.js';
import { formatDuration, readDuration } from '../duration.js';
import { UsageError } from '../errors.js';
import type { CycleStatus } from '../metrics.js';
import type { AlertQueries, SilenceWrites } from '../alerts/repositories.js';
import { RAW_MAX_RANGE_MS } from '../store/index.js';
import { readRange } from '../time.js';
import { isoOrNull, isoTime as iso } from '../time-format.js';
import { METRICS, type BoxState, type CycleRecord, type HistoryResult, type Metric, type Store } from '../domain/store.js';
import { badRequest, notFound } from './errors.js';
import { ACCOUNT_NAME, isFleetKey, accountOf } from '../box-id.js';
import type { LeaseRepository } from '../domain/leases.js';
import { accountServerJson, readAccountServers, type AccountServerJson } from '../cluster/servers.js';

export type { BoxJson, BoxViewJson } from '../views/boxes.js';
export { BOX_CONDITIONS, boxCondition, staleAfterMs, type BoxCondition } from '../views/boxes.js';

/** What `/api/alerts` and the box views read of the alerts; the app provides it (src/views/). */
export interface AlertsReader {
  /** Alert views as JSON, newest first; `activeOnly` keeps pending and firing ones; `since` (ms) drops alerts that last changed earlier. */
  list(query: { activeOnly: boolean; since: number | undefined }): unknown[] | Promise<unknown[]>;
  /** The stored alert states (the box views list each box's open ones); absent: none. */
  states?(): Awaitable<Iterable<AlertState>>;
  /** The stale threshold of the box views (default 15 minutes). */
  staleAfterMs?: number;
}

/** Reads query parameters once each: an unknown or repeated parameter is a 400. */
export function queryParams(query: URLSearchParams, allowed: readonly string[]): Map<string, string> {
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

/** `/api/boxes?account=NAME`: every box's view (of one account, with `account`), trouble first. */
export async function boxesJson(boxes: readonly BoxState[], reader: AlertsReader | undefined, now: number, account?: string): Promise<{ boxes: BoxViewJson[] }> {
  const selected = account === undefined ? boxes : boxes.filter((b) => b.account === account);
  return { boxes: boxViews(selected, (await reader?.states?.()) ?? [], now, reader?.staleAfterMs ?? DEFAULT_STALE_AFTER_MS).map(boxViewJson) };
}

/** The `account` query parameter (absent or empty: every account); a name of the wrong form is a 400. */
export function accountParam(query: URLSearchParams): string | undefined {
  const account = query.get('account') || undefined;
  if (account !== undefined && !ACCOUNT_NAME.test(account)) throw badRequest('account', `account: must be an account name (lowercase letters, digits, "-", "_"), not "${account}"`);
  return account;
}

/** `/api/boxes/:serial`: one box's view. */
export async function boxDetailJson(store: Store, serial: string, reader: AlertsReader | undefined, now: number): Promise<BoxViewJson> {
  const box = await store.box(serial);
  if (!box) throw notFound(`unknown box serial "${serial}"`);
  const open = openAlertsBySerial((await reader?.states?.()) ?? []).get(serial) ?? [];
  return boxViewJson(boxView(box, open, now, reader?.staleAfterMs ?? DEFAULT_STALE_AFTER_MS));
}

/** `/api/boxes/:serial/history?metric=battery&since=24h` (or from/to; kind=raw|rollup forces one form). */
export async function historyJson(store: Store, serial: string, query: URLSearchParams, now: number): Promise<HistoryJson> {
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
  const box = await store.box(serial);
  if (!box) throw notFound(`unknown box serial "${serial}"`);
  const h: HistoryResult = await store.history(serial, metric as Metric, from, to, kind === undefined ? undefined : { kind });
  return historyResultJson(serial, box.name, h);
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

// --- dashboard endpoints -------------------------------------------------------------------------

/** What the dashboard endpoints read besides the store: the alert tables and a bit of configuration. */
export interface DashboardReader {
  alerts: AlertQueries & SilenceWrites;
  /** Acknowledgements; without them `/api/acks` answers 404 and no alert shows an ack. */
  acks?: AckRepository;
  /** Configured rule names (the overview's rule filter, silence validation). */
  config: Config;
}

const DAY_MS = 86_400_000;

/** A row of the overview: the box view. */
export type OverviewRow = BoxViewJson;

function pageParams(params: Map<string, string>, defaultPer: number): { page: number; per: number } {
  const int = (name: string, fallback: number, max: number): number => {
    const text = params.get(name);
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) throw badRequest(name, `${name}: must be a whole number from 1 to ${max}, not "${text}"`);
    return n;
  };
  return { page: int('page', 1, 1_000_000), per: int('per', defaultPer, 500) };
}

const includesFolded = (text: string | null, part: string): boolean => (text ?? '').toLowerCase().includes(part.toLowerCase());

/** Every box, trouble first (as `boxwatch status` orders them), with its open alerts. */
export interface FleetView {
  boxes: BoxState[];
  open: Map<string, AlertState[]>;
}

/** Reads the fleet view; it changes only with a poll cycle, so the dashboard keeps one per cycle. */
export async function fleetView(store: Store, alerts: Pick<AlertQueries, 'states'>, acks: Pick<AckRepository, 'latestByKey'> | undefined, now: number): Promise<FleetView> {
  const open = openAlertsBySerial(withAcks((await alerts.states()).values(), (await acks?.latestByKey()) ?? new Map(), now));
  return { boxes: sortByTrouble(await store.boxes(), open), open };
}

/**
 * `/api/overview`: the fleet's counts (online, offline, stale, missing, alerting by the most severe
 * firing alert of each box) and one page of boxes, trouble first, after the filters
 * `state`, `severity`, `rule`, `firmware`, `location` (part of), `q` (part of serial or name).
 * `account` narrows everything, the counts and the gateway alerts too, to one account's boxes.
 */
export function overviewJson(fleet: FleetView, config: Config, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['state', 'severity', 'rule', 'firmware', 'location', 'q', 'page', 'per', 'account']);
  const account = accountParam(query);
  const state = params.get('state') || undefined;
  if (state !== undefined && state !== 'alerting' && !BOX_CONDITIONS.includes(state as BoxCondition)) {
    throw badRequest('state', `state: must be one of ${[...BOX_CONDITIONS, 'alerting'].join(', ')}, not "${state}"`);
  }
  const severity = params.get('severity') || undefined;
  if (severity !== undefined && !(severity in SEVERITY_RANK)) throw badRequest('severity', `severity: must be critical, warning or info, not "${severity}"`);
  const { page, per } = pageParams(params, 50);
  const staleMs = staleAfterMs(config);
  const { open } = fleet;
  const accounts = new Map<string, number>();
  for (const box of fleet.boxes) accounts.set(box.account, (accounts.get(box.account) ?? 0) + 1);
  const all = account === undefined ? fleet.boxes : fleet.boxes.filter((b) => b.account === account);
  const counts = { total: all.length, online: 0, offline: 0, stale: 0, missing: 0, alerting: { critical: 0, warning: 0, info: 0 } as Record<Severity, number> };
  const firmware = new Map<string, number>();
  const rows: { box: BoxState; state: BoxCondition; alerts: AlertState[] }[] = [];
  const rule = params.get('rule') || undefined;
  const fw = params.get('firmware') || undefined;
  const location = params.get('location') || undefined;
  const q = params.get('q') || undefined;
  for (const box of all) {
    const cond = boxCondition(box, now, staleMs);
    counts[cond] += 1;
    const alerts = open.get(box.serial) ?? [];
    const firing = alerts.filter((a) => a.status === 'firing');
    const worst = firing[0]?.severity; // openAlertsBySerial puts firing and most severe first
    if (worst !== undefined) counts.alerting[worst] += 1;
    firmware.set(box.firmware, (firmware.get(box.firmware) ?? 0) + 1);
    if (state === 'alerting' ? firing.length === 0 : state !== undefined && cond !== state) continue;
    if (severity !== undefined && !firing.some((a) => a.severity === severity)) continue;
    if (rule !== undefined && !alerts.some((a) => a.rule === rule)) continue;
    if (fw !== undefined && box.firmware !== fw) continue;
    if (location !== undefined && !includesFolded(box.location, location)) continue;
    if (q !== undefined && !includesFolded(box.serial, q) && !includesFolded(box.name, q)) continue;
    rows.push({ box, state: cond, alerts });
  }
  const pages = Math.max(1, Math.ceil(rows.length / per));
  const boxes: OverviewRow[] = rows.slice((page - 1) * per, page * per).map((r) => boxViewJson(boxView(r.box, r.alerts, now, staleMs)));
  return {
    now: iso(now),
    counts,
    // Each account's gateway alerts (their box: the account's fleet key), with the account.
    gatewayAlerts: [...open]
      .filter(([key]) => isFleetKey(key) && (account === undefined || accountOf(key) === account))
      .sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([key, list]) => list.map((a) => ({ ...boxAlertJson(a), account: accountOf(key) }))),
    matched: rows.length,
    page,
    per,
    pages,
    boxes,
    facets: {
      firmware: [...firmware].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([version, count]) => ({ version, count })),
      rules: config.rules.map((r) => r.name),
      accounts: [...accounts].sort((a, b) => a[0].localeCompare(b[0])).map(([name, count]) => ({ name, count })),
    },
  };
}

/** `/api/gateway`: the header line's facts: last successful cycle, failures, clock skew. */
export interface GatewayJson {
  lastSuccessAt: string | null;
  failingSince: string | null;
  lastErrorCode: string | null;
  /** The accounts whose last cycle failed (src/box-id.ts), sorted; `failingSince` is the earliest of theirs. */
  failingAccounts: string[];
  lastCycle: { startedAt: string; outcome: string; durationMs: number; errorCode: string | null; boxes: number } | null;
  /** How far the gateway's clock is ahead of ours (ms); null before the first answer. */
  skewMs: number | null;
}

export function gatewayJson(input: { lastSuccessAt: number | null; status: CycleStatus; lastCycle: CycleRecord | undefined; skewMs: number | null }): GatewayJson {
  const c = input.lastCycle;
  return {
    lastSuccessAt: isoOrNull(input.lastSuccessAt),
    failingSince: isoOrNull(input.status.failingSince),
    lastErrorCode: input.status.failingSince === null ? null : input.status.lastErrorCode,
    failingAccounts: input.status.failingAccounts,
    lastCycle: c ? { startedAt: iso(c.startedAt), outcome: c.outcome, durationMs: c.durationMs, errorCode: c.errorCode, boxes: c.boxes } : null,
    skewMs: input.skewMs,
  };
}

/**
 * `/api/cluster`: this daemon's replica (`{ id, leads }`, null without `cluster:`) and who serves
 * each account (src/cluster/servers.ts; empty when nothing was ever leased).
 */
export async function clusterJson(
  leases: Pick<LeaseRepository, 'leases' | 'replicas'> | undefined,
  replica: { id: string; leads: string[] } | null,
  query: URLSearchParams,
  now: number,
): Promise<{ now: string; replica: { id: string; leads: string[] } | null; accounts: AccountServerJson[] }> {
  queryParams(query, []);
  const servers = leases === undefined ? [] : await readAccountServers(leases, now);
  return { now: iso(now), replica, accounts: servers.map((s) => accountServerJson(s, now)) };
}

/** The first instant (UTC midnight) of `days` whole days ending with today's. */
function dayRange(now: number, days: number): { from: number; to: number } {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return { from: today - (days - 1) * DAY_MS, to: today + DAY_MS };
}

function daysParam(params: Map<string, string>): number {
  const text = params.get('days') ?? '90';
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 400) throw badRequest('days', `days: must be a whole number from 1 to 400, not "${text}"`);
  return n;
}

/** Connected fraction per UTC day for one box (null: no observation that day), oldest first. */
async function dailyUptime(store: Store, serial: string, from: number, days: number): Promise<(number | null)[]> {
  const h = await store.history(serial, 'connected', from, from + days * DAY_MS, { kind: 'rollup', maxPoints: days });
  const out: (number | null)[] = new Array<number | null>(days).fill(null);
  if (h.kind !== 'rollup') return out;
  for (const p of h.points) {
    const i = Math.floor((p.t - from) / DAY_MS);
    if (i >= 0 && i < days) out[i] = p.mean;
  }
  return out;
}

/** `/api/boxes/:serial/uptime?days=90`: one connected fraction per UTC day. */
export async function boxUptimeJson(store: Store, serial: string, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['days']);
  const days = daysParam(params);
  if (!(await store.box(serial))) throw notFound(`unknown box serial "${serial}"`);
  const { from } = dayRange(now, days);
  return { serial, from: iso(from), days, uptime: await dailyUptime(store, serial, from, days) };
}

/**
 * `/api/uptime?days=30|90&page&per&q`: the fleet's percentage online per UTC day (time-weighted
 * over every box observed that day) and daily bars for one page of boxes (serial order).
 */
export async function uptimeJson(store: Store, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['days', 'page', 'per', 'q']);
  const days = daysParam(params);
  const { page, per } = pageParams(params, 50);
  const { from } = dayRange(now, days);
  const fleet: (number | null)[] = [];
  for (let i = 0; i < days; i++) {
    const start = from + i * DAY_MS;
    const end = Math.min(start + DAY_MS, now);
    if (end <= start) {
      fleet.push(null);
      continue;
    }
    let observed = 0;
    let connected = 0;
    for (const row of await store.uptime(start, end)) {
      observed += row.observedMs;
      connected += (row.connectedFraction ?? 0) * row.observedMs;
    }
    fleet.push(observed > 0 ? connected / observed : null);
  }
  const q = params.get('q') || undefined;
  const boxes = (await store.boxes()).filter((b) => q === undefined || includesFolded(b.serial, q) || includesFolded(b.name, q));
  const pages = Math.max(1, Math.ceil(boxes.length / per));
  return {
    from: iso(from),
    days,
    fleet,
    matched: boxes.length,
    page,
    per,
    pages,
    boxes: await Promise.all(boxes.slice((page - 1) * per, page * per).map(async (b) => ({ serial: b.serial, name: b.name, uptime: await dailyUptime(store, b.serial, from, days) }))),
  };
}

/** `/api/firmware`: versions across the fleet, most common first, with (up to 200 of) the boxes on each. */
export async function firmwareJson(store: Store) {
  const byVersion = new Map<string, BoxState[]>();
  for (const b of await store.boxes()) {
    const list = byVersion.get(b.firmware);
    if (list) list.push(b);
    else byVersion.set(b.firmware, [b]);
  }
  const versions = [...byVersion]
    .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    .map(([version, boxes]) => ({ version, count: boxes.length, boxes: boxes.slice(0, 200).map((b) => ({ serial: b.serial, name: b.name })) }));
  return { versions };
}

/** `/api/boxes/:serial/alerts?since=90d`: the box's alert transitions, oldest first. */
export async function boxAlertsJson(store: Store, reader: DashboardReader, serial: string, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['since', 'from', 'to']);
  const { from, to } = parseRange(params.has('since') || params.has('from') ? params : new Map([['since', '90d']]), now);
  if (!(await store.box(serial))) throw notFound(`unknown box serial "${serial}"`);
  return { serial, transitions: (await reader.alerts.transitionsSince(from, serial)).filter((t) => t.at < to).map(transitionJson) };
}

/**
 * `/api/notifications?since=24h&notifier=N&status=dead&alert=rule/serial`: the notification log
 * (src/views/notifications.ts, the view `boxwatch notifications` prints): one entry per message
 * and notifier, newest first (at most 1,000), with its delivery status, attempts, delivery time,
 * last error (secrets redacted) and the alerts it told about.
 */
export async function notificationsJson(reader: DashboardReader, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['since', 'notifier', 'status', 'alert']);
  const since = now - parseSince(params.get('since') ?? '24h');
  const statusText = params.get('status');
  const status = NOTIFICATION_STATUSES.find((s) => s === statusText);
  if (statusText !== undefined && status === undefined) throw badRequest('status', `status: must be one of ${NOTIFICATION_STATUSES.join(', ')}, not "${statusText}"`);
  const secrets = reader.config.notifiers.flatMap((n) => notifierSecrets(n));
  const views = await readNotificationViews(reader.alerts, { since, notifier: params.get('notifier'), status, alert: params.get('alert') }, { secrets });
  return { notifications: views.map(notificationJson) };
}

/** `/api/alerts/transitions?since=24h`: every transition since then, newest first, with what held it back. */
export async function transitionsJson(reader: DashboardReader, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['since']);
  const since = now - parseSince(params.get('since') ?? '24h');
  return { transitions: (await reader.alerts.transitionsSince(since)).reverse().slice(0, 5_000).map(transitionJson) };
}

/** `/api/silences?all=true`: pending and active silences (all: expired too); `writable` says whether writes are on. */
export async function silencesJson(reader: DashboardReader, query: URLSearchParams, now: number, writable: boolean) {
  const params = queryParams(query, ['all']);
  const all = params.get('all');
  if (all !== undefined && all !== 'true' && all !== 'false') throw badRequest('all', `all: must be true or false, not "${all}"`);
  return { writable, silences: (await reader.alerts.silences(now, { all: all === 'true' })).map((s) => silenceJson(s, now)) };
}

const splitList = (text: string | undefined): string[] =>
  (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** `/api/silences/preview?boxes=BX-1*,BX-2&rules=battery-low`: the open alerts such a silence would hold back. */
export async function silencePreviewJson(reader: DashboardReader, query: URLSearchParams) {
  const params = queryParams(query, ['boxes', 'rules']);
  const boxes = splitList(params.get('boxes'));
  const rules = splitList(params.get('rules'));
  const matchers = { ...(boxes.length > 0 ? { boxes } : {}), ...(rules.length > 0 ? { rules } : {}) };
  const alerts = openAlertsMatching({ matchers }, (await reader.alerts.states()).values());
  return { alerts: alerts.map((a) => ({ rule: a.rule, serial: a.serial, severity: a.severity, status: a.status, summary: a.summary })) };
}

const silenceInput = z.strictObject({
  boxes: z.array(z.string().max(200)).max(50).default([]),
  rules: z.array(z.string().max(200)).max(50).default([]),
  for: z.string().max(20),
  comment: z.string().max(1_000),
  by: z.string().max(100).optional(),
});

/** `POST /api/silences` with `{boxes, rules, for, comment, by?}`: checked as `silence add` checks its options. */
export async function createSilenceJson(reader: DashboardReader, body: unknown, now: number) {
  const parsed = silenceInput.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue?.path[0] ?? 'body');
    throw badRequest(field, `${field}: ${issue?.message ?? 'invalid'}`);
  }
  const { boxes, rules, comment, by } = parsed.data;
  let input;
  try {
    input = silenceFromOptions({ box: boxes, rule: rules, for: parsed.data.for, comment, by: by ?? 'dashboard' }, reader.config, now, {});
  } catch (err) {
    if (err instanceof UsageError) throw badRequest('body', err.message.replace(/--/g, ''));
    throw err;
  }
  const added = await reader.alerts.addSilence(input, now);
  return { silence: silenceJson(added, now), matches: openAlertsMatching(added, (await reader.alerts.states()).values()).length };
}

/** `POST /api/silences/:id/expire`: ends the silence now (false when it had already ended). */
export async function expireSilenceJson(reader: DashboardReader, id: string, now: number) {
  const found = await reader.alerts.silence(id);
  if (!found) throw notFound(`no silence with id "${id}"`);
  return { id, expired: await reader.alerts.expireSilence(id, now) };
}

const ackInput = z.strictObject({
  alert: z.string().min(1).max(400),
  comment: z.string().max(1_000),
  for: z.string().max(20).optional(),
  by: z.string().max(100).optional(),
});

function acksOf(reader: DashboardReader): AckRepository {
  if (!reader.acks) throw notFound('acknowledgements are not available here');
  return reader.acks;
}

/**
 * `POST /api/acks` with `{alert, comment, for?, by?}`: acknowledges a firing alert (as `boxwatch
 * ack` does, src/alerts/acks.ts): its repeats stop until it resolves, its severity rises or `for`
 * ends. Answer `201 {"ack": {...}}`.
 */
export async function createAckJson(reader: DashboardReader, body: unknown, now: number) {
  const acks = acksOf(reader);
  const parsed = ackInput.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue?.path[0] ?? 'body');
    throw badRequest(field, `${field}: ${issue?.message ?? 'invalid'}`);
  }
  const states = await reader.alerts.states();
  let input;
  try {
    input = ackFromRequest({ ...parsed.data, by: parsed.data.by ?? 'dashboard' }, states.values(), now);
  } catch (err) {
    if (err instanceof UsageError) throw badRequest('body', err.message.replace(/--/g, ''));
    throw err;
  }
  return { ack: ackJson(await acks.add(input)) };
}

/** `GET /api/acks?since=7d`: the acknowledgements given since then, newest first. */
export async function acksJson(reader: DashboardReader, query: URLSearchParams, now: number) {
  const params = queryParams(query, ['since']);
  const since = now - parseSince(params.get('since') ?? '7d');
  return { acks: (await acksOf(reader).since(since)).map(ackJson) };
}
