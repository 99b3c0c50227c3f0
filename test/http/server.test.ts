/**
 * The daemon's HTTP server over real HTTP on 127.0.0.1 with a real SQLite store in a temp dir and
 * a FakeClock: health transitions, Prometheus exposition of the stored fleet, the JSON API, and
 * the read-only and error contract (400/404/405/500, no-store).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { startHttpServer, type AlertsReader, type RunningHttpServer } from '../../src/http/index.js';
import { parseListen } from '../../src/http/listen.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { BoxSnapshot } from '../../src/domain/model.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import type { CycleWrite, Store } from '../../src/domain/store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { bySerial, parsePromText } from './prom-text.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const MAX_AGE = 90_000;

function snap(serial: string, over: Partial<BoxSnapshot> = {}): BoxSnapshot {
  return {
    serial,
    id: Number(serial.replace(/\D/g, '')) || 1,
    name: `Box ${serial}`,
    connected: true,
    battery: 80,
    signal: -70,
    firmware: '2.10.0',
    lastSeen: T0,
    registeredAt: Date.parse('2025-01-01T00:00:00Z'),
    location: 'Lyon, Depot',
    ip: '10.0.0.1',
    detailsAt: T0,
    ...over,
  };
}

function okCycle(t: number, seen: BoxSnapshot[], missing: string[] = []): CycleWrite {
  return {
    cycle: { startedAt: t, durationMs: 200, requests: 1 + seen.length, outcome: 'ok', errorCode: null, error: null, boxes: seen.length, detailsFetched: seen.length },
    seen,
    missing,
  };
}

function failedCycle(t: number, code: string): CycleWrite {
  return {
    cycle: { startedAt: t, durationMs: 5_000, requests: 3, outcome: 'failed', errorCode: code, error: 'gateway said: bad key secret=abc123', boxes: 0, detailsFetched: 0 },
    seen: [],
    missing: [],
  };
}

let dir: string;
let clock: FakeClock;
let store: SqliteStore;
let metrics: Metrics;
let server: RunningHttpServer;
let alertsReader: AlertsReader | undefined;

/** What the daemon does each cycle: write the store, tell the metrics. */
function record(write: CycleWrite): void {
  store.recordCycle(write);
  metrics.observeCycle(write.cycle);
}

async function start(over: { store?: Store } = {}): Promise<void> {
  server = await startHttpServer({
    listen: '127.0.0.1:0',
    store: over.store ?? store,
    metrics,
    clock,
    health: { maxCycleAgeMs: MAX_AGE },
    alerts: alertsReader,
    logger: silentLogger,
  });
}

async function get(path: string, init?: RequestInit): Promise<{ status: number; headers: Headers; text: string; body: unknown }> {
  const res = await fetch(`${server.url}${path}`, { ...init, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, headers: res.headers, text, body: type.startsWith('application/json') && text !== '' ? JSON.parse(text) : undefined };
}

async function scrape(): Promise<ReturnType<typeof parsePromText>> {
  const res = await get('/metrics');
  expect(res.status).toBe(200);
  return parsePromText(res.text);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-http-'));
  clock = new FakeClock(T0);
  store = openStore(join(dir, 'boxwatch.db'), { clock });
  metrics = createMetrics({ clock });
  metrics.setBoxesProvider(() => store.boxes());
  alertsReader = undefined;
});

afterEach(async () => {
  await server?.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('/healthz', () => {
  it('is 503 before any cycle, 200 after a successful one, 503 once it is too old, and says why', async () => {
    await start();
    let res = await get('/healthz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 'unhealthy', reason: 'no poll cycle has run yet', lastCycle: null });

    record(okCycle(T0, [snap('SN-0001')]));
    clock.advance(30_000);
    res = await get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      lastSuccessAt: '2026-03-01T10:00:00.200Z',
      lastCycle: { startedAt: '2026-03-01T10:00:00.000Z', durationMs: 200, outcome: 'ok', errorCode: null, requests: 2, boxes: 1, detailsFetched: 1 },
    });

    // The scheduler stops producing cycles: healthy up to the limit, unhealthy past it.
    clock.set(T0 + 200 + MAX_AGE);
    expect((await get('/healthz')).status).toBe(200);
    clock.advance(1);
    res = await get('/healthz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 'unhealthy', lastSuccessAt: '2026-03-01T10:00:00.200Z' });
    expect((res.body as { reason: string }).reason).toBe('last successful poll cycle ended 1m30s ago, more than the allowed 1m30s');
  });

  it('tolerates a failure within the limit, then reports since when the gateway has been failing and the last code', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001')]));
    record(failedCycle(T0 + 30_000, 'unavailable'));
    clock.set(T0 + 40_000);
    let res = await get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', lastCycle: { outcome: 'failed', errorCode: 'unavailable' } });

    record(failedCycle(T0 + 60_000, 'unavailable'));
    record(failedCycle(T0 + 90_000, 'unauthorized'));
    clock.set(T0 + 100_000);
    res = await get('/healthz');
    expect(res.status).toBe(503);
    expect((res.body as { reason: string }).reason).toBe(
      'gateway polls failing since 2026-03-01T10:00:30.000Z (last failure: unauthorized at 2026-03-01T10:01:30.000Z)',
    );
    // The cycle's error text is not repeated over HTTP (it is for the log).
    expect(res.text).not.toContain('secret');
    expect(res.text).not.toContain('abc123');

    record(okCycle(T0 + 120_000, [snap('SN-0001')]));
    clock.set(T0 + 121_000);
    expect((await get('/healthz')).status).toBe(200);
  });

  it('after a restart, judges from the store until the metrics have seen cycles of their own', async () => {
    store.recordCycle(okCycle(T0, [snap('SN-0001')]));
    clock.set(T0 + 10_000);
    await start();
    expect((await get('/healthz')).status).toBe(200);
    // The first cycles after the restart fail: the last success before it still counts until too old.
    record(failedCycle(T0 + 30_000, 'timeout'));
    clock.set(T0 + 40_000);
    expect((await get('/healthz')).status).toBe(200);
    record(failedCycle(T0 + 60_000, 'timeout'));
    clock.set(T0 + 200_000);
    const res = await get('/healthz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      reason: 'gateway polls failing since 2026-03-01T10:00:30.000Z (last failure: timeout at 2026-03-01T10:01:00.000Z)',
      lastSuccessAt: '2026-03-01T10:00:00.200Z',
    });
  });

  it('takes the last success from a callback when given one', async () => {
    server = await startHttpServer({
      listen: '127.0.0.1:0',
      store,
      metrics,
      clock,
      health: { maxCycleAgeMs: MAX_AGE, lastSuccessAt: () => T0 - 10_000 },
      logger: silentLogger,
    });
    store.recordCycle(failedCycle(T0, 'unauthorized'));
    expect((await get('/healthz')).status).toBe(200);
    clock.set(T0 + MAX_AGE);
    const res = await get('/healthz');
    expect(res.status).toBe(503);
    expect((res.body as { reason: string }).reason).toBe(
      'no successful poll cycle since 2026-03-01T09:59:50.000Z (last failure: unauthorized at 2026-03-01T10:00:00.000Z)',
    );
  });
});

describe('/metrics', () => {
  it('exposes one gauge series per box in the fleet, matching the store; absent values have no sample', async () => {
    await start();
    record(
      okCycle(T0, [
        snap('SN-0001', { battery: 91, signal: -71, lastSeen: T0 - 5_000 }),
        snap('SN-0002', { connected: false, battery: null, signal: -103, lastSeen: T0 - 600_000 }),
        snap('SN-0003', { battery: 12, signal: null, detailsAt: null }),
      ]),
    );
    clock.advance(10_000);
    const res = await get('/metrics');
    expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
    const { samples, types } = parsePromText(res.text);

    expect(bySerial(samples, 'boxwatch_box_connected')).toEqual({ 'SN-0001': 1, 'SN-0002': 0, 'SN-0003': 1 });
    expect(bySerial(samples, 'boxwatch_box_battery_percent')).toEqual({ 'SN-0001': 91, 'SN-0003': 12 });
    expect(bySerial(samples, 'boxwatch_box_signal_dbm')).toEqual({ 'SN-0001': -71, 'SN-0002': -103 });
    expect(bySerial(samples, 'boxwatch_box_last_seen_age_seconds')).toEqual({ 'SN-0001': 15, 'SN-0002': 610, 'SN-0003': 10 });
    expect(samples.find((s) => s.name === 'boxwatch_box_connected' && s.labels.serial === 'SN-0002')?.labels).toEqual({
      serial: 'SN-0002',
      name: 'Box SN-0002',
    });
    for (const name of ['boxwatch_box_connected', 'boxwatch_box_battery_percent', 'boxwatch_box_signal_dbm', 'boxwatch_box_last_seen_age_seconds']) {
      expect(types.get(name)).toBe('gauge');
    }
    // prom-client's process metrics share the registry.
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
  });

  it('follows the store: a box removed from the fleet loses its series, a rename replaces it, a reconnect updates it', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001'), snap('SN-0002'), snap('SN-0003', { connected: false, battery: null })]));
    expect(Object.keys(bySerial((await scrape()).samples, 'boxwatch_box_connected'))).toEqual(['SN-0001', 'SN-0002', 'SN-0003']);

    record(okCycle(T0 + 30_000, [snap('SN-0001', { name: 'Front desk' }), snap('SN-0003', { battery: 55 })], ['SN-0002']));
    const { samples } = await scrape();
    const connected = samples.filter((s) => s.name === 'boxwatch_box_connected');
    expect(connected.map((s) => s.labels)).toEqual([
      { serial: 'SN-0001', name: 'Front desk' },
      { serial: 'SN-0003', name: 'Box SN-0003' },
    ]);
    expect(bySerial(samples, 'boxwatch_box_connected')).toEqual({ 'SN-0001': 1, 'SN-0003': 1 });
    expect(bySerial(samples, 'boxwatch_box_battery_percent')).toEqual({ 'SN-0001': 80, 'SN-0003': 55 });
    expect(samples.some((s) => s.labels.serial === 'SN-0002')).toBe(false);
  });

  it('escapes box names with quotes, backslashes and newlines in labels, and they read back unchanged', async () => {
    await start();
    const names = ['Lobby <B> & "East"', 'C:\\boxes\\north', 'two\nlines', 'end\\'];
    record(okCycle(T0, names.map((name, i) => snap(`SN-000${i + 1}`, { name }))));
    const res = await get('/metrics');
    expect(res.text).toContain('name="Lobby <B> & \\"East\\""');
    expect(res.text).toContain('name="two\\nlines"');
    const { samples } = parsePromText(res.text);
    expect(samples.filter((s) => s.name === 'boxwatch_box_battery_percent').map((s) => s.labels.name)).toEqual(names);
  });

  it('counts cycles, gateway requests, skipped ticks and notifications; reads alerts and outbox from providers', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001')]));
    record(failedCycle(T0 + 30_000, 'unavailable'));
    metrics.observeRequest({ endpoint: 'device_list', outcome: 'ok', durationMs: 40, attempt: 1 });
    metrics.observeRequest({ endpoint: 'device_list', outcome: 'unavailable', durationMs: 10_000, attempt: 1 });
    metrics.observeRequest({ endpoint: 'device_list', outcome: 'unavailable', durationMs: 10_000, attempt: 2 });
    metrics.observeRequest({ endpoint: 'device_details', outcome: 'ok', durationMs: 30, attempt: 1 });
    metrics.tickSkipped();
    metrics.tickSkipped();
    metrics.observeNotification('ops-mail', 'ok');
    metrics.observeNotification('slack', 'retry');
    let firing = [
      { rule: 'battery_low', severity: 'warning', count: 2 },
      { rule: 'disconnected', severity: 'critical', count: 1 },
    ];
    metrics.setAlertsProvider(() => firing);
    metrics.setOutboxProvider(() => [{ notifier: 'slack', depth: 3 }]);

    const scraped = await scrape();
    let samples = scraped.samples;
    const types = scraped.types;
    const value = (name: string, labels: Record<string, string> = {}): number | undefined =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

    expect(value('boxwatch_poll_cycles_total', { outcome: 'ok' })).toBe(1);
    expect(value('boxwatch_poll_cycles_total', { outcome: 'failed' })).toBe(1);
    expect(types.get('boxwatch_poll_cycle_duration_seconds')).toBe('histogram');
    expect(value('boxwatch_poll_cycle_duration_seconds_count', { outcome: 'failed' })).toBe(1);
    expect(value('boxwatch_poll_cycle_duration_seconds_sum', { outcome: 'failed' })).toBe(5);
    expect(value('boxwatch_poll_cycle_duration_seconds_bucket', { outcome: 'ok', le: '0.25' })).toBe(1);
    expect(value('boxwatch_poll_cycle_duration_seconds_bucket', { outcome: 'ok', le: '0.1' })).toBe(0);
    expect(value('boxwatch_poll_last_success_timestamp_seconds')).toBe((T0 + 200) / 1000);
    expect(value('boxwatch_poll_ticks_skipped_total')).toBe(2);
    expect(value('boxwatch_gateway_requests_total', { endpoint: 'device_list', outcome: 'unavailable' })).toBe(2);
    expect(value('boxwatch_gateway_requests_total', { endpoint: 'device_list', outcome: 'ok' })).toBe(1);
    expect(value('boxwatch_gateway_requests_total', { endpoint: 'device_details', outcome: 'ok' })).toBe(1);
    expect(value('boxwatch_gateway_request_duration_seconds_count', { endpoint: 'device_list' })).toBe(3);
    expect(value('boxwatch_notifications_total', { notifier: 'ops-mail', outcome: 'ok' })).toBe(1);
    expect(value('boxwatch_notifications_total', { notifier: 'slack', outcome: 'retry' })).toBe(1);
    expect(value('boxwatch_alerts_firing', { rule: 'battery_low', severity: 'warning' })).toBe(2);
    expect(value('boxwatch_alerts_firing', { rule: 'disconnected', severity: 'critical' })).toBe(1);
    expect(value('boxwatch_outbox_depth', { notifier: 'slack' })).toBe(3);

    // A resolved alert leaves no series behind.
    firing = [{ rule: 'battery_low', severity: 'warning', count: 1 }];
    ({ samples } = await scrape());
    expect(samples.filter((s) => s.name === 'boxwatch_alerts_firing').map((s) => [s.labels.rule, s.value])).toEqual([['battery_low', 1]]);
  });

  it('keeps separate registries: two metric sets in one process do not collide', async () => {
    const other = createMetrics({ clock });
    other.tickSkipped();
    await start();
    const { samples } = await scrape();
    expect(samples.find((s) => s.name === 'boxwatch_poll_ticks_skipped_total')?.value).toBe(0);
    expect(parsePromText(await other.text()).samples.find((s) => s.name === 'boxwatch_poll_ticks_skipped_total')?.value).toBe(1);
  });
});

describe('/api/boxes', () => {
  // A row outside JavaScript's date range (written by an older version from a hostile gateway)
  // once made /api/boxes answer 500, for good.
  it('one stored time that no date can hold does not break the list: it reads "invalid time"', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001'), snap('SN-0002')]));
    // Written by another process (as an older version would have), next to the running store.
    const other = new Database(join(dir, 'boxwatch.db'));
    other.prepare('UPDATE boxes SET last_seen = ?, registered_at = ? WHERE serial = ?').run(1e17, -1e17, 'SN-0002');
    other.close();
    const res = await get('/api/boxes');
    expect(res.status).toBe(200);
    const boxes = (res.body as { boxes: { serial: string; lastSeen: string; registeredAt: string }[] }).boxes;
    expect(boxes.find((b) => b.serial === 'SN-0002')).toMatchObject({ lastSeen: 'invalid time', registeredAt: 'invalid time' });
    expect(boxes.find((b) => b.serial === 'SN-0001')?.lastSeen).toBe(new Date(T0).toISOString());
    expect((await get('/api/boxes/SN-0002')).status).toBe(200);
  });

  it('lists the view of every box with ISO times, trouble first: missing ones first, with state missing and missingSince', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001', { lastSeen: T0 - 5_000 }), snap('SN-0002')]));
    record(okCycle(T0 + 30_000, [snap('SN-0001', { battery: 79, lastSeen: T0 + 25_000 })], ['SN-0002']));
    const res = await get('/api/boxes');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      boxes: [
        expect.objectContaining({ serial: 'SN-0002', state: 'missing', missingSince: '2026-03-01T10:00:30.000Z', lastPolled: '2026-03-01T10:00:00.000Z' }),
        {
          serial: 'SN-0001',
          account: 'default',
          id: 1,
          name: 'Box SN-0001',
          connected: true,
          battery: 79,
          signal: -70,
          firmware: '2.10.0',
          lastSeen: '2026-03-01T10:00:25.000Z',
          registeredAt: '2025-01-01T00:00:00.000Z',
          location: 'Lyon, Depot',
          ip: '10.0.0.1',
          detailsAt: '2026-03-01T10:00:00.000Z',
          firstSeen: '2026-03-01T10:00:00.000Z',
          lastPolled: '2026-03-01T10:00:30.000Z',
          missingSince: null,
          state: 'online',
          alerts: [],
        },
      ],
    });
  });

  it("/api/boxes/:serial/calls looks the box up like the box's other endpoints: a bare serial of two accounts' boxes is 404, not an empty answer", async () => {
    server = await startHttpServer({ listen: '127.0.0.1:0', store, metrics, clock, health: { maxCycleAgeMs: MAX_AGE }, logger: silentLogger, calls: { repo: store.calls, now: () => clock.now() } });
    for (const account of ['acme', 'globex']) {
      const write = okCycle(T0, [snap(`${account}/BX-00003`)]);
      record({ ...write, cycle: { ...write.cycle, account } });
    }
    for (const path of ['/api/boxes/BX-00003', '/api/boxes/BX-00003/history', '/api/boxes/BX-00003/calls', '/api/boxes/NOPE-1/calls']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toMatchObject({ error: 'not_found', message: expect.stringMatching(/^unknown box serial "(BX-00003|NOPE-1)"$/) });
    }
    const res = await get(`/api/boxes/${encodeURIComponent('acme/BX-00003')}/calls`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ box: 'acme/BX-00003', calls: [] });
  });

  it('answers one box by its URL-decoded serial, 404 JSON for an unknown one', async () => {
    await start();
    record(okCycle(T0, [snap('SN-0001'), snap('BX 7/2', { name: 'Odd "serial"' })]));
    let res = await get('/api/boxes/SN-0001');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ serial: 'SN-0001', battery: 80 });
    res = await get(`/api/boxes/${encodeURIComponent('BX 7/2')}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ serial: 'BX 7/2', name: 'Odd "serial"' });
    res = await get('/api/boxes/SN-9999');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found', message: 'unknown box serial "SN-9999"' });
    res = await get('/api/boxes/%E0%A4%A');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'bad_request', parameter: 'path' });
  });
});

describe('/api/boxes/:serial/history', () => {
  beforeEach(async () => {
    await start();
    for (let i = 0; i < 6; i++) record(okCycle(T0 + i * 60_000, [snap('SN-0001', { battery: 80 - i * 2 })]));
    clock.set(T0 + 6 * 60_000);
  });

  it('returns raw points with ISO times for since=, and for from=/to=', async () => {
    let res = await get('/api/boxes/SN-0001/history?metric=battery&since=1h');
    expect(res.status).toBe(200);
    const body = res.body as { kind: string; from: string; to: string; points: { t: string; value: number; until: string | null }[] };
    expect(body).toMatchObject({ serial: 'SN-0001', name: 'Box SN-0001', metric: 'battery', kind: 'raw', from: '2026-03-01T09:06:00.000Z', to: '2026-03-01T10:06:00.000Z' });
    expect(body.points.map((p) => p.value)).toEqual([80, 78, 76, 74, 72, 70]);
    expect(body.points[1]).toEqual({ t: '2026-03-01T10:01:00.000Z', value: 78, until: '2026-03-01T10:02:00.000Z' });

    res = await get('/api/boxes/SN-0001/history?metric=connected&from=2026-03-01T10:02:00Z&to=2026-03-01T10:04:00Z');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ metric: 'connected', from: '2026-03-01T10:02:00.000Z', to: '2026-03-01T10:04:00.000Z' });

    res = await get('/api/boxes/SN-0001/history?since=24h&kind=rollup');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ metric: 'battery', kind: 'rollup' });
  });

  it.each([
    ['metric=volume', 'metric', 'metric: unknown metric "volume" (use battery, signal, connected, firmware)'],
    ['since=yesterday', 'since', 'since: invalid duration "yesterday" (use e.g. 30s, 5m, 2h, 7d)'],
    ['since=0s', 'since', 'since: must be longer than 0s'],
    ['since=' + '9'.repeat(60) + 'h', 'since', `since: invalid duration "${'9'.repeat(37)}..." (use e.g. 30s, 5m, 2h, 7d)`],
    ['since=4000d', 'since', 'since: duration "4000d" is longer than the limit of 3650d'],
    ['from=last%20week', 'from', 'from: invalid time "last week" (ISO 8601, e.g. 2026-03-01 or 2026-03-01T22:00; UTC unless an offset such as +02:00 is given)'],
    ['from=0001-01-01', 'from', 'from: time "0001-01-01" is outside the accepted range 2000-01-01 to 2100-01-01 (UTC)'],
    ['from=2026-03-01T10:00:00Z&to=soon', 'to', 'to: invalid time "soon" (ISO 8601, e.g. 2026-03-01 or 2026-03-01T22:00; UTC unless an offset such as +02:00 is given)'],
    ['from=2026-01-01T00:00:00Z&metric=firmware', 'from', 'from: raw history is limited to 31d per request; ask for a shorter range'],
    ['since=60d&kind=raw', 'since', 'since: raw history is limited to 31d per request; ask for a shorter range or kind=rollup'],
    ['from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z', 'from', 'from must be before to'],
    ['since=1h&from=2026-03-01T10:00:00Z', 'since', 'use either since or from/to, not both'],
    ['metrics=battery', 'metrics', 'unknown parameter "metrics" (allowed: metric, since, from, to, kind)'],
    ['metric=battery&metric=signal', 'metric', 'parameter "metric" given more than once'],
  ])('answers 400 naming the parameter for %s', async (query, parameter, message) => {
    const res = await get(`/api/boxes/SN-0001/history?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'bad_request', message, parameter });
  });

  // Once a loop over every hour of the range (a century: 876,000 queries, seconds of a blocked
  // event loop per request); now the loops stop where the box's data stops.
  it('answers a century-long range from the data it has, and /healthz still answers alongside', async () => {
    const [history, health] = await Promise.all([
      get('/api/boxes/SN-0001/history?metric=battery&from=2000-01-01&to=2099-12-31T23:00'),
      get('/healthz'),
    ]);
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ kind: 'rollup', from: '2000-01-01T00:00:00.000Z', to: '2099-12-31T23:00:00.000Z' });
    expect((history.body as { points: { min: number; max: number }[] }).points).toEqual([expect.objectContaining({ min: 70, max: 80 })]);
    expect(health.status).toBe(200);
  });

  it('answers 404 for an unknown serial', async () => {
    const res = await get('/api/boxes/SN-0404/history?metric=battery&since=24h');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found', message: 'unknown box serial "SN-0404"' });
  });
});

describe('/api/alerts', () => {
  it('is an empty list without an alerts reader', async () => {
    await start();
    const res = await get('/api/alerts?active=true');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ alerts: [] });
  });

  it('passes active= and since= to the reader and returns its list', async () => {
    const queries: unknown[] = [];
    alertsReader = {
      list: (q) => {
        queries.push(q);
        return [{ rule: 'battery_low', serial: 'SN-0001', status: 'firing' }];
      },
    };
    await start();
    let res = await get('/api/alerts?active=true&since=2h');
    expect(res.body).toEqual({ alerts: [{ rule: 'battery_low', serial: 'SN-0001', status: 'firing' }] });
    res = await get('/api/alerts');
    expect(res.status).toBe(200);
    expect(queries).toEqual([
      { activeOnly: true, since: T0 - 2 * 3_600_000 },
      { activeOnly: false, since: undefined },
    ]);
    res = await get('/api/alerts?active=yes');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'bad_request', parameter: 'active', message: 'active: must be true or false, not "yes"' });
  });
});

describe('/api/alerts under concurrent reads', () => {
  it('renders one query once per cycle, however many clients ask at once; the next cycle renders afresh', async () => {
    let renders = 0;
    alertsReader = {
      list: () => {
        renders += 1;
        return [{ rule: 'battery_low', box: 'SN-0001', state: 'firing' }];
      },
    };
    await start();
    record(okCycle(T0, [snap('SN-0001')]));
    const answers = await Promise.all(Array.from({ length: 50 }, () => get('/api/alerts?active=true')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(renders).toBe(1);
    await get('/api/alerts'); // another query: its own rendering
    expect(renders).toBe(2);
    record(okCycle(T0 + 30_000, [snap('SN-0001')]));
    await get('/api/alerts?active=true');
    expect(renders).toBe(3);
  });
});

describe('read-only contract', () => {
  it('refuses other methods with 405 and Allow, on every endpoint', async () => {
    await start();
    for (const [method, path] of [['POST', '/api/boxes'], ['DELETE', '/api/boxes/SN-0001'], ['PUT', '/metrics'], ['PATCH', '/healthz']] as const) {
      const res = await get(path, { method, body: method === 'DELETE' ? undefined : '{}' });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(res.body).toMatchObject({ error: 'method_not_allowed' });
    }
  });

  it('answers unknown paths with 404 JSON, HEAD without a body, and never lets a response be cached', async () => {
    await start();
    for (const path of ['/nope', '/api/boxes/', '/api/boxes/SN-0001/stats', '/metrics/extra', '/api']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toMatchObject({ error: 'not_found' });
    }
    const head = await get('/api/boxes', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    for (const path of ['/', '/healthz', '/metrics', '/api/boxes', '/nope', '/api/alerts?active=maybe']) {
      expect((await get(path)).headers.get('cache-control'), path).toBe('no-store');
    }
  });

  it('turns an internal failure into 500 JSON without the error text or a stack trace', async () => {
    const broken = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'boxes') return () => { throw new Error('SQLITE_CORRUPT at /var/lib/boxwatch/secret.db'); };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    await start({ store: broken });
    const res = await get('/api/boxes');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'internal', message: 'internal error (see the daemon log)' });
    expect(res.text).not.toMatch(/SQLITE|secret|\sat\s/);
    // The server keeps serving.
    expect((await get('/api/boxes/SN-0001')).status).toBe(404);
  });
});

describe('listening', () => {
  it('parses host:port including IPv6 and reports the bound port', async () => {
    expect(parseListen('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen(':9464')).toEqual({ host: '', port: 9464 });
    expect(() => parseListen('localhost')).toThrow(/http.listen: must be host:port/);
    expect(() => parseListen('127.0.0.1:70000')).toThrow(/http.listen/);
    await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);
  });

  it('rejects with a clear error when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      await expect(
        startHttpServer({ listen: `127.0.0.1:${port}`, store, metrics, clock, health: { maxCycleAgeMs: MAX_AGE }, logger: silentLogger }),
      ).rejects.toMatchObject({ code: 'http_listen', message: expect.stringContaining(`cannot listen on 127.0.0.1:${port} (http.listen): another process (another boxwatch?) holds the port`) });
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    await start();
  });
});
