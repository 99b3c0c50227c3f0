/**
 * The daemon's HTTP server (`http:`): the endpoints, the JSON API and the dashboard on what the
 * daemon keeps (the fleet snapshot, the live event stream, the replica's leases). Null when
 * `http.enabled` is false.
 */
import type { Clock } from '../clock.js';
import type { Replica } from '../cluster/replica.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { firingCounts } from '../alerts/firing.js';
import type { Metrics } from '../metrics.js';
import type { OutboxRepository } from '../domain/outbox.js';
import type { CallsRepo } from '../domain/calls.js';
import type { DataStore } from '../store/data-store.js';
import { alertViewSource } from '../views/alerts.js';
import { apiReader } from '../views/api-reader.js';
import type { LiveEvents } from '../web/live.js';
import { startHttpServer, type RunningHttpServer } from './server.js';
import type { FleetSnapshot } from './snapshot.js';

export async function startDaemonHttp(o: {
  config: Config;
  store: DataStore;
  snapshot: FleetSnapshot;
  metrics: Metrics;
  events: LiveEvents;
  /** The gateway clock's skew of the first account (null: unknown). */
  skew: () => number | null;
  replica: Replica | null;
  /** The calls' repository (null: calls are off, the call endpoints answer 404). */
  calls: CallsRepo | null;
  /** Each account's schedule interval and request timeout (the health limit). */
  accounts: readonly { tickIntervalMs: number; config: { timeout: number } }[];
  /** Milliseconds of `clock` per real millisecond (the demo's speed; 1 otherwise). */
  clockRate: number;
  clock: Clock;
  logger: Logger;
}): Promise<RunningHttpServer | null> {
  const { config, store, replica, clock, skew, logger } = o;
  if (!config.http.enabled) return null;
  const alerts = store.alerts;
  const tickIntervalMs = Math.max(...o.accounts.map((a) => a.tickIntervalMs));
  const timeoutMs = Math.max(...o.accounts.map((a) => a.config.timeout));
  const http = await startHttpServer({
    listen: config.http.listen,
    store,
    snapshot: o.snapshot,
    metrics: o.metrics,
    clock,
    logger,
    alerts: apiReader(alertViewSource(store, alerts, store.acks), config, clock),
    dashboard: { alerts, acks: store.acks, config, events: o.events, skewMs: skew, leases: store.leases, ...(replica && { replica: () => replica.health() }) },
    ...(o.calls && { calls: { repo: o.calls, now: () => clock.now() + (skew() ?? 0) } }),
    limits: { maxConnections: config.http.maxConnections },
    // healthy while the last good cycle is younger than three schedule intervals plus a timeout
    health: { maxCycleAgeMs: (3 * tickIntervalMs + timeoutMs) * o.clockRate, accounts: config.gateways.map((a) => a.name), ...(replica && { replica: () => replica.health() }) },
  });
  logger.info({ url: http.url, dashboard: `${http.url}${config.http.basePath}` }, 'http endpoints listening');
  return http;
}

/** The /metrics gauges read from the fleet snapshot (boxes, firing alerts) and the outbox (its depth per notifier). */
export function feedMetrics(metrics: Metrics, snapshot: FleetSnapshot, outbox: Pick<OutboxRepository, 'stats'>): void {
  metrics.setBoxesProvider(() => snapshot.boxes());
  metrics.setAlertsProvider(async () => firingCounts((await snapshot.states()).values()));
  metrics.setOutboxProvider(async () => (await outbox.stats()).map((s) => ({ notifier: s.notifier, depth: s.pending })));
}
