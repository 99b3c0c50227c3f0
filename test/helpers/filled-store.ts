/**
 * A boxwatch database with something in every table (history over an hour boundary, alert state
 * and transitions, silences, acks, queued items, the outbox, calls, test calls, recordings), and
 * the same questions asked of any store holding it: for the tests that copy a database
 * (`boxwatch migrate`, pg_dump and pg_restore) and check that the copy reads the same.
 */
import { initialState } from '../../src/alerts/state.js';
import type { AlertState } from '../../src/alerts/types.js';
import { dayOf, type CallObservation } from '../../src/domain/calls.js';
import type { SqliteStore } from '../../src/store/index.js';
import type { PostgresStore } from '../../src/store/postgres/index.js';
import { item } from '../notify/fixtures.js';
import { HOUR, okCycle, snap } from '../store/model.js';
import { connectionOf } from './sqlite.js';

export const T0 = Date.parse('2026-05-01T09:40:00Z');
export const RULE = { name: 'box-offline', kind: 'disconnected', severity: 'critical' as const };

export function firing(serial: string, at: number): AlertState {
  return { ...initialState(RULE, serial, at), status: 'firing', activeSince: at, activeCycles: 1, firingSince: at, notifiedFiring: true, lastNotifiedAt: at, summary: 'disconnected' };
}

function call(id: string, serial: string, startedAt: number, status: string): CallObservation {
  return {
    callId: id, serial, agentId: 7, status, direction: 'outbound', startedAt, endedAt: status === 'initiated' ? null : startedAt + 60_000,
    durationSec: status === 'completed' ? 60 : null, toHash: `h-${id}`, toMasked: '+1415•••0123', toNumber: null, recording: null,
    transcript: null, variables: { lang: 'en' }, detailsRead: false, wantsDetails: false,
  };
}

/** A SQLite database with something in every table boxwatch copies. */
export function fill(store: SqliteStore): void {
  const a = firing('BX-002', T0);
  for (let i = 0; i < 60; i++) {
    const t = T0 + i * 60_000; // an hour of polls across 10:00: closed-hour rollups too
    const seen = [snap('BX-001', { battery: 90 - (i % 5), signal: -70 - (i % 3), location: 'Lobby <b> & "East"' }), snap('BX-002', { connected: i % 7 !== 0, firmware: i < 30 ? '3.4.1' : '3.4.2' })];
    store.commitCycle(okCycle(t, seen), t, () => ({
      alerts: i === 0 ? { states: new Map([[a.key, a]]), dropped: [], transitions: [{ key: a.key, rule: a.rule, kind: a.kind, serial: a.serial, severity: a.severity, from: 'inactive', to: 'firing', at: t, value: 0, threshold: null, summary: 'disconnected', heldBack: null, heldBy: [] }], queued: [{ notifier: 'mail', createdAt: t, item: item({ serial: 'BX-002' }) }] } : { states: new Map([[a.key, a]]), dropped: [], transitions: [], queued: [] },
      result: undefined,
    }));
  }
  store.alerts.addSilence({ matchers: { boxes: ['BX-001'] }, startsAt: T0, endsAt: T0 + 10 * HOUR, comment: 'maintenance', createdBy: 'ops' }, T0);
  store.acks.add({ key: a.key, rule: a.rule, serial: a.serial, firingSince: T0, severity: 'critical', by: 'ana', comment: 'on it', at: T0 + 60_000, until: null });
  store.outbox().enqueue('mail', { items: [item({ serial: 'BX-002' })] }, T0 + 120_000);
  connectionOf(store).prepare("INSERT INTO recordings (call_id, serial, path, sha256, bytes, archived_at) VALUES ('c1', 'BX-001', 'BX-001/c1.wav', 'ab12', 4096, ?)").run(T0 + HOUR);
  connectionOf(store).prepare("INSERT INTO test_calls (entry, serial, agent_id, day, at, state, call_id) VALUES ('daily', 'BX-002', 7, ?, ?, 'placed', 'c2')").run(dayOf(T0), T0);
  store.calls.write({ account: 'default', now: T0 + HOUR, upserts: [call('c1', 'BX-001', T0, 'completed'), call('c2', 'BX-002', T0 + 60_000, 'failed'), call('c3', 'BX-002', T0 + 120_000, 'initiated')], checked: [], sync: { highWater: T0 + 120_000, syncedAt: T0 + HOUR, resume: null }, stuckAfterMs: HOUR });
}

/** What a store answers, the same questions for SQLite and PostgreSQL. */
export async function readBack(store: SqliteStore | PostgresStore): Promise<unknown> {
  const end = T0 + HOUR;
  return {
    boxes: await store.boxes(),
    lastCycle: await store.lastCycle(),
    battery: await store.history('BX-001', 'battery', T0, end, { kind: 'raw' }),
    rollups: await store.history('BX-002', 'connected', T0 - HOUR, end + HOUR, { kind: 'rollup' }),
    firmware: await store.history('BX-002', 'firmware', T0, end),
    valueAt: await store.valueAt('BX-001', 'signal', T0 + 30 * 60_000 + 1),
    uptime: await store.uptime(T0 - HOUR, end),
    states: [...(await store.alerts.states()).values()],
    transitions: await store.alerts.transitionsSince(0),
    silences: await store.alerts.silences(T0),
    outbox: await store.alerts.outboxSince(0),
    acks: await store.acks.since(0),
    calls: await store.calls.list({ limit: 10 }),
    callRollups: await store.calls.rollups(dayOf(T0) - 1, dayOf(T0) + 1),
    callSync: await store.calls.syncState('default'),
  };
}
