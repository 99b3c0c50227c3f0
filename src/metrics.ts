/**
 * Prometheus metrics of the daemon, on a Registry of their own (never prom-client's global one, so
 * several apps or tests in one process do not collide). Counters and histograms are fed by the app
 * through small methods; per-box gauges, firing alerts and outbox depths are read from provider
 * callbacks at scrape time, so a box that left the fleet has no series and nothing goes stale.
 */
import { DEFAULT_ACCOUNT } from './box-id.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Awaitable } from './awaitable.js';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import type { RequestEvent } from './gateway/types.js';
import type { BoxState, CycleRecord } from './domain/store.js';
import type { FiringAlertCount } from './alerts/firing.js';

export interface OutboxDepth {
  notifier: string;
  depth: number;
}

/** What the metrics saw of the poll cycles since start (healthz uses it for its reason). */
export interface CycleStatus {
  /** End of the last successful cycle (ms), null if none since start. */
  lastOkAt: number | null;
  /** Start of the first failed cycle after the last successful one, null while not failing. */
  failingSince: number | null;
  /** Error code of the last failed cycle, null if none. */
  lastErrorCode: string | null;
  /** The accounts whose last cycle failed, sorted (empty while none fails). */
  failingAccounts: string[];
}

export interface Metrics {
  readonly registry: Registry;
  /** One finished poll cycle (ok or failed). */
  observeCycle(record: CycleRecord): void;
  /** One HTTP attempt to the gateway. */
  observeRequest(event: RequestEvent): void;
  /** A scheduler tick skipped because the previous cycle was still running. */
  tickSkipped(): void;
  /** A poll cycle that ended in an unexpected error (a bug, or damaged data): logged and counted. */
  cycleCrashed(): void;
  /** The wall clock was behind the last recorded cycle (stepped back); the cycle was still recorded. */
  clockSteppedBack(): void;
  /** A damaged database row (unreadable JSON) was set aside, in `table`. */
  damagedRow(table: string): void;
  /** An HTTP connection closed as it arrived because `http.max_connections` were open. */
  httpConnectionDropped(): void;
  /** One delivery attempt of a notifier; outcome e.g. 'ok', 'retry', 'failed'. */
  observeNotification(notifier: string, outcome: string): void;
  /** Every box the store knows; a provider that returns the same array again gets its rendering reused. */
  setBoxesProvider(provider: () => Awaitable<BoxState[]>): void;
  setAlertsProvider(provider: () => Awaitable<FiringAlertCount[]>): void;
  setOutboxProvider(provider: () => Awaitable<OutboxDepth[]>): void;
  cycleStatus(): CycleStatus;
  /**
   * Takes the fleet `fleet` (the daemon's cycle, from its snapshot), else reads it from the boxes
   * provider (the daemon calls it after each cycle, so that a scrape while the store cannot be
   * read shows the fleet as last read) and, while someone scrapes, renders the per-box families if
   * it changed, so that scrapes find them ready. When the text was not read since the previous
   * call nothing is rendered (the next scrape renders).
   */
  prepare(fleet?: BoxState[]): Promise<void>;
  /** The exposition text (Prometheus text format, content type `registry.contentType`). */
  text(): Promise<string>;
}

export interface MetricsOptions {
  /** Used for `boxwatch_box_last_seen_age_seconds`; default the system clock. */
  clock?: Clock;
  /** Adds prom-client's process metrics (CPU, memory, event loop, ...); default true. */
  processMetrics?: boolean;
}

/** The per-box gauges (labels serial and name); `boxwatch export --format openmetrics` writes the same series. */
export const BOX_GAUGES = {
  connected: { name: 'boxwatch_box_connected', help: '1 if the box is connected to the gateway, 0 if not.' },
  battery: { name: 'boxwatch_box_battery_percent', help: 'Battery level in percent; no sample while the gateway reports none.' },
  signal: { name: 'boxwatch_box_signal_dbm', help: 'Signal strength in dBm; no sample before the first details fetch.' },
} as const;

/** Period of the event-loop delay sampling timer: no timer of the daemon fires more often than once a second. */
export const EVENT_LOOP_SAMPLE_MS = 1000;

const BOX_AGE = { name: 'boxwatch_box_last_seen_age_seconds', help: "Seconds since the box's last activity (last_seen, corrected for the gateway's clock skew)." };

/** A label value in the Prometheus and OpenMetrics text formats: backslash, double quote and line feed escaped. */
export function promLabelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

const CYCLE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const REQUEST_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Builds the registry and every boxwatch metric on it. */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const clock = options.clock ?? systemClock;
  const registry = new Registry();
  const registers = [registry];
  let boxes: () => Awaitable<BoxState[]> = () => [];
  let alerts: () => Awaitable<FiringAlertCount[]> = () => [];
  let outbox: () => Awaitable<OutboxDepth[]> = () => [];
  // Per account: an ok cycle of one account never clears another's failure.
  const statusOf = new Map<string, { lastOkAt: number | null; failingSince: number | null; lastErrorCode: string | null }>();
  // While the store cannot be read (a PostgreSQL server out of reach) a scrape still answers, with
  // what was read last (and boxwatch_poll_cycles_total{outcome="failed"} growing).
  const boxesNow = lastAnswer<BoxState[]>([]);
  const alertsNow = lastAnswer<FiringAlertCount[]>([]);
  const outboxNow = lastAnswer<OutboxDepth[]>([]);

  /**
   * The per-box families, rendered by hand (prom-client's labelled gauges are slow for a fleet of
   * thousands of boxes). Connected, battery and signal change only with a cycle: when the provider
   * returns the same array again (a per-cycle snapshot, src/http/snapshot.ts), their text is
   * reused, so any number of scrapes between two cycles cost one render, and the daemon renders
   * it right after the cycle (`prepare()`) so that no scrape does. The ages are written at every
   * scrape (they grow between cycles) from prefixes rendered with the rest.
   */
  /** Label sets by serial, kept while the name stays the same (escaping every name every cycle would cost a large fleet CPU). */
  let labelCache = new Map<string, { name: string; labels: string }>();
  /** Whether the label sets carry `account` (a fleet with boxes of an account other than "default"). */
  let labelsWithAccount = false;
  const labelsOf = (b: BoxState, next: Map<string, { name: string; labels: string }>): string => {
    let entry = labelCache.get(b.serial);
    if (entry === undefined || entry.name !== b.name) {
      const account = labelsWithAccount ? `,account="${promLabelValue(b.account)}"` : '';
      entry = { name: b.name, labels: `{serial="${promLabelValue(b.serial)}",name="${promLabelValue(b.name)}"${account}}` };
    }
    next.set(b.serial, entry);
    return entry.labels;
  };
  let rendered: { from: BoxState[]; text: string; agePrefixes: string[]; lastSeen: number[] } | null = null;
  /** Whether the text was read since the last `prepare()`: a daemon nobody scrapes renders nothing after its cycles. */
  let scraped = false;
  const render = (all: BoxState[]): NonNullable<typeof rendered> => {
    if (rendered !== null && rendered.from === all) return rendered;
    const fleet = all.filter((b) => b.missingSince === null);
    const withAccount = fleet.some((b) => b.account !== DEFAULT_ACCOUNT);
    if (withAccount !== labelsWithAccount) {
      labelsWithAccount = withAccount;
      labelCache = new Map();
    }
    const next = new Map<string, { name: string; labels: string }>();
    const labels = fleet.map((b) => labelsOf(b, next));
    labelCache = next;
    const family = (g: { name: string; help: string }, value: (b: BoxState) => number | null): string => {
      let text = `# HELP ${g.name} ${g.help}\n# TYPE ${g.name} gauge`;
      fleet.forEach((b, i) => {
        const v = value(b);
        if (v !== null) text += `\n${g.name}${labels[i] as string} ${v}`;
      });
      return text;
    };
    const text = [
      family(BOX_GAUGES.connected, (b) => (b.connected ? 1 : 0)),
      family(BOX_GAUGES.battery, (b) => b.battery),
      family(BOX_GAUGES.signal, (b) => b.signal),
    ].join('\n\n');
    rendered = { from: all, text, agePrefixes: labels.map((l) => `${BOX_AGE.name}${l} `), lastSeen: fleet.map((b) => b.lastSeen) };
    return rendered;
  };
  const boxFamilies = async (): Promise<string> => {
    const r = render(await boxesNow(boxes));
    const now = clock.now();
    const ages = r.agePrefixes.map((prefix, i) => prefix + String(Math.max(0, (now - (r.lastSeen[i] as number)) / 1000)));
    return `${r.text}\n\n# HELP ${BOX_AGE.name} ${BOX_AGE.help}\n# TYPE ${BOX_AGE.name} gauge\n${ages.join('\n')}${ages.length > 0 ? '\n' : ''}`;
  };

  const cycleDuration = new Histogram({
    name: 'boxwatch_poll_cycle_duration_seconds',
    help: 'Duration of poll cycles.',
    labelNames: ['outcome'] as const,
    buckets: CYCLE_BUCKETS,
    registers,
  });
  const cycles = new Counter({
    name: 'boxwatch_poll_cycles_total',
    help: 'Poll cycles by outcome (ok, failed).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const lastOk = new Gauge({
    name: 'boxwatch_poll_last_success_timestamp_seconds',
    help: 'Unix time of the end of the last successful poll cycle since start.',
    registers,
  });
  // Per account (docs/http.md): one account's outage shows while another polls.
  const accountCycles = new Counter({
    name: 'boxwatch_account_poll_cycles_total',
    help: 'Poll cycles by account and outcome (ok, failed).',
    labelNames: ['account', 'outcome'] as const,
    registers,
  });
  const accountLastOk = new Gauge({
    name: 'boxwatch_account_last_success_timestamp_seconds',
    help: "Unix time of the end of the account's last successful poll cycle since start.",
    labelNames: ['account'] as const,
    registers,
  });
  const accountFailing = new Gauge({
    name: 'boxwatch_account_gateway_failing',
    help: "1 while the account's last poll cycle failed (gateway unreachable, key refused, ...), else 0.",
    labelNames: ['account'] as const,
    registers,
  });
  const skipped = new Counter({
    name: 'boxwatch_poll_ticks_skipped_total',
    help: 'Scheduler ticks skipped because the previous cycle was still running.',
    registers,
  });
  const crashes = new Counter({
    name: 'boxwatch_poll_cycle_crashes_total',
    help: 'Poll cycles that ended in an unexpected error (see the logs); polling goes on.',
    registers,
  });
  const clockSteps = new Counter({
    name: 'boxwatch_clock_steps_back_total',
    help: 'Poll cycles whose start was not after the last recorded cycle (the clock stepped back); each was recorded just after it.',
    registers,
  });
  const damaged = new Counter({
    name: 'boxwatch_damaged_rows_total',
    help: 'Damaged database rows (unreadable JSON) set aside, by table; each row is counted once per process.',
    labelNames: ['table'] as const,
    registers,
  });
  const httpDropped = new Counter({
    name: 'boxwatch_http_connections_dropped_total',
    help: 'HTTP connections closed as they arrived because http.max_connections were open.',
    registers,
  });
  const rejectedRecords = new Counter({
    name: 'boxwatch_gateway_records_rejected_total',
    help: 'Gateway records set aside as invalid (schema or range violations); the rest of the fleet is processed.',
    registers,
  });
  const detailsSkipped = new Counter({
    name: 'boxwatch_poll_details_skipped_total',
    help: 'Device details not back by the cycle deadline (their boxes keep their previous details).',
    registers,
  });
  const requests = new Counter({
    name: 'boxwatch_gateway_requests_total',
    help: "HTTP attempts to the Gateway API by endpoint and outcome ('ok' or the error code).",
    labelNames: ['endpoint', 'outcome'] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: 'boxwatch_gateway_request_duration_seconds',
    help: 'Duration of HTTP attempts to the Gateway API.',
    labelNames: ['endpoint'] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  });
  new Gauge({
    name: 'boxwatch_alerts_firing',
    help: 'Alerts currently firing, by rule and severity.',
    labelNames: ['rule', 'severity'] as const,
    registers,
    async collect() {
      const firing = await alertsNow(alerts);
      this.reset();
      for (const a of firing) this.inc({ rule: a.rule, severity: a.severity }, a.count);
    },
  });
  const notifications = new Counter({
    name: 'boxwatch_notifications_total',
    help: 'Notification delivery attempts by notifier and outcome.',
    labelNames: ['notifier', 'outcome'] as const,
    registers,
  });
  new Gauge({
    name: 'boxwatch_outbox_depth',
    help: 'Notifications waiting in the outbox, by notifier.',
    labelNames: ['notifier'] as const,
    registers,
    async collect() {
      const depths = await outboxNow(outbox);
      this.reset();
      for (const o of depths) this.set({ notifier: o.notifier }, o.depth);
    },
  });
  // prom-client samples event-loop delay with a timer of this period (10 ms by default, which
  // woke an idle daemon 100 times a second); once a second is enough for the lag statistics.
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

  return {
    registry,
    httpConnectionDropped() {
      httpDropped.inc();
    },
    observeCycle(record) {
      const seconds = record.durationMs / 1000;
      cycleDuration.observe({ outcome: record.outcome }, seconds);
      cycles.inc({ outcome: record.outcome });
      const account = record.account ?? DEFAULT_ACCOUNT;
      accountCycles.inc({ account, outcome: record.outcome });
      accountFailing.set({ account }, record.outcome === 'ok' ? 0 : 1);
      if (record.outcome === 'ok') accountLastOk.set({ account }, (record.startedAt + record.durationMs) / 1000);
      rejectedRecords.inc(record.rejected?.length ?? 0);
      detailsSkipped.inc(record.detailsSkipped ?? 0);
      const status = statusOf.get(account) ?? { lastOkAt: null, failingSince: null, lastErrorCode: null };
      statusOf.set(account, status);
      if (record.outcome === 'ok') {
        status.lastOkAt = record.startedAt + record.durationMs;
        status.failingSince = null;
        lastOk.set(status.lastOkAt / 1000);
      } else {
        status.failingSince ??= record.startedAt;
        status.lastErrorCode = record.errorCode;
      }
    },
    observeRequest(event) {
      requests.inc({ endpoint: event.endpoint, outcome: event.outcome });
      requestDuration.observe({ endpoint: event.endpoint }, event.durationMs / 1000);
    },
    tickSkipped() {
      skipped.inc();
    },
    cycleCrashed() {
      crashes.inc();
    },
    clockSteppedBack() {
      clockSteps.inc();
    },
    damagedRow(table) {
      damaged.inc({ table });
    },
    observeNotification(notifier, outcome) {
      notifications.inc({ notifier, outcome });
    },
    setBoxesProvider(provider) {
      boxes = provider;
    },
    setAlertsProvider(provider) {
      alerts = provider;
    },
    setOutboxProvider(provider) {
      outbox = provider;
    },
    cycleStatus: () => cycleStatusOf(statusOf),
    async prepare(fleet) {
      const all = await boxesNow(fleet === undefined ? boxes : () => fleet);
      if (!scraped) return;
      scraped = false;
      render(all);
    },
    async text() {
      scraped = true;
      const families = await boxFamilies();
      return `${await registry.metrics()}\n${families}`;
    },
  };
}

/**
 * The daemon's cycle status from each account's: the last ok cycle of any account; failing since
 * the earliest failure of the accounts failing now, with that account's error code.
 */
function cycleStatusOf(statusOf: ReadonlyMap<string, Omit<CycleStatus, 'failingAccounts'>>): CycleStatus {
  let lastOkAt: number | null = null;
  let failing: Omit<CycleStatus, 'failingAccounts'> | null = null;
  const failingAccounts: string[] = [];
  for (const [account, s] of statusOf) {
    if (s.lastOkAt !== null) lastOkAt = Math.max(lastOkAt ?? 0, s.lastOkAt);
    if (s.failingSince === null) continue;
    failingAccounts.push(account);
    if (failing === null || s.failingSince < (failing.failingSince ?? Infinity)) failing = s;
  }
  return { lastOkAt, failingSince: failing?.failingSince ?? null, lastErrorCode: failing?.lastErrorCode ?? null, failingAccounts: failingAccounts.sort() };
}

/** Reads through a provider; when it fails, its last answer (`initial` before any) stands. */
function lastAnswer<T>(initial: T): (read: () => Awaitable<T>) => Promise<T> {
  let last = initial;
  return async (read) => {
    try {
      last = await read();
    } catch {
      // the store is out of reach: the last answer stands
    }
    return last;
  };
}
