import { describe, expect, it } from 'vitest';
import { evaluateCycle, statesFromRows } from '../../src/alerts/engine.js';
import { GATEWAY_UNAUTHORIZED, GATEWAY_UNREACHABLE, gatewayEvaluations, isGatewayDown } from '../../src/alerts/gateway.js';
import type { GatewayCycle } from '../../src/alerts/gateway.js';
import type { AlertState, RuleEvaluation } from '../../src/alerts/types.js';
import { alertKey } from '../../src/alerts/types.js';
import { HOUR, Harness, MIN, SEC, T0, ev, rule } from './harness.js';

const OFFLINE = rule('box-offline', 'disconnected', { severity: 'critical', forMs: 2 * MIN });
const OFFLINE_NOW = rule('box-offline', 'disconnected', { severity: 'critical' });
const BATTERY = rule('battery-low', 'low_battery');
const SIGNAL = rule('signal-weak', 'weak_signal', { forMs: 10 * MIN });
const FIRMWARE = rule('firmware', 'firmware_drift', { severity: 'info' });
const CYCLE = 30 * SEC;

const key = alertKey;

describe('engine: a box disconnects and reconnects', () => {
  it('box-offline with for 2m: pending, firing (one notification), resolved (one notification), then at rest', () => {
    const h = new Harness();
    const seen: string[] = [];
    const cycle = (connected: boolean): void => {
      const r = h.after(CYCLE, [ev(OFFLINE, 'SN-0042', connected ? 'inactive' : 'active')]);
      seen.push(`${h.status(key('box-offline', 'SN-0042'))}${r.notified.length ? ` [${r.notified.join(', ')}]` : ''}`);
    };
    for (const c of [true, false, false, false, false, false, true, true]) cycle(c);
    expect(seen).toEqual([
      'inactive',
      'pending',
      'pending',
      'pending',
      'pending',
      'firing [firing box-offline SN-0042]',
      'resolved [resolved box-offline SN-0042]',
      'inactive',
    ]);
    expect(h.states.size).toBe(0);
  });

  it('the firing notification carries severity, value and firingSince; the resolved one resolvedAt', () => {
    const h = new Harness();
    const fired = h.after(0, [ev(OFFLINE_NOW, 'SN-0042', 'active', 'disconnected')]).result.notifications[0];
    expect(fired).toMatchObject({ type: 'firing', severity: 'critical', serial: 'SN-0042', firingSince: T0, value: 'disconnected' });
    const resolved = h.after(MIN, [ev(OFFLINE_NOW, 'SN-0042', 'inactive', 'connected')]).result.notifications[0];
    expect(resolved).toMatchObject({ type: 'resolved', firingSince: T0, resolvedAt: T0 + MIN, value: 'connected' });
  });
});

describe('engine: no notification storm', () => {
  it('a condition alternating every cycle with for 10m creates no notification at all', () => {
    const h = new Harness();
    let notified = 0;
    let transitions = 0;
    for (let i = 0; i < 40; i++) {
      const r = h.after(CYCLE, [ev(SIGNAL, 'SN-0007', i % 2 === 0 ? 'active' : 'inactive', -106)]);
      notified += r.notified.length;
      transitions += r.transitions.length;
    }
    expect(notified).toBe(0);
    expect(transitions).toBe(40); // pending and back, recorded in the history
  });

  it('keep_firing_for longer than the gaps: one firing notification, one resolved at the end', () => {
    const h = new Harness();
    const r = rule('signal-weak', 'weak_signal', { keepFiringForMs: 2 * MIN });
    const notified: string[] = [];
    for (let i = 0; i < 40; i++) notified.push(...h.after(CYCLE, [ev(r, 'SN-0007', i % 2 === 0 ? 'active' : 'inactive')]).notified);
    for (let i = 0; i < 5; i++) notified.push(...h.after(CYCLE, [ev(r, 'SN-0007', 'inactive')]).notified);
    expect(notified).toEqual(['firing signal-weak SN-0007', 'resolved signal-weak SN-0007']);
  });
});

describe('engine: repeat_interval', () => {
  it('a still-firing alert is notified again every repeat interval, exactly at the boundary', () => {
    const h = new Harness();
    h.ctx.repeatIntervalMs = 4 * HOUR;
    const log: string[] = [];
    log.push(...h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active')]).notified.map((n) => `0h ${n}`));
    for (let m = 30; m <= 9 * 60; m += 30) {
      log.push(...h.after(30 * MIN, [ev(OFFLINE_NOW, 'SN-0001', 'active')]).notified.map((n) => `${m / 60}h ${n}`));
    }
    expect(log).toEqual(['0h firing box-offline SN-0001', '4h repeat box-offline SN-0001', '8h repeat box-offline SN-0001']);
  });

  it('repeat_interval 0 disables repeats', () => {
    const h = new Harness();
    h.ctx.repeatIntervalMs = 0;
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active')]);
    expect(h.after(100 * HOUR, [ev(OFFLINE_NOW, 'SN-0001', 'active')]).notified).toEqual([]);
  });
});

describe('engine: inhibition (a disconnected box holds back battery, signal and stale)', () => {
  const STALE = rule('box-stale', 'stale');

  it('battery low on a disconnected box changes state, is recorded as inhibited, and is notified when the box reconnects', () => {
    const h = new Harness();
    let r = h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0001', 'active', 12)]);
    expect(r.notified).toEqual(['firing box-offline SN-0001']);
    expect(r.transitions).toEqual(['battery-low SN-0001 inactive>firing (inhibited)', 'box-offline SN-0001 inactive>firing']);
    expect(r.result.transitions[0]?.heldBy).toEqual([key('box-offline', 'SN-0001')]);
    expect(h.status(key('battery-low', 'SN-0001'))).toBe('firing');

    r = h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0001', 'unknown')]);
    expect(r.notified).toEqual([]);

    r = h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'inactive'), ev(BATTERY, 'SN-0001', 'active', 11)]);
    expect(r.notified).toEqual(['firing battery-low SN-0001', 'resolved box-offline SN-0001']);
  });

  it('an inhibited alert that fires and resolves during the disconnection is never notified', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(STALE, 'SN-0001', 'inactive')]);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(STALE, 'SN-0001', 'active')]).notified).toEqual([]);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(STALE, 'SN-0001', 'inactive')]).notified).toEqual([]);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'inactive'), ev(STALE, 'SN-0001', 'inactive')]).notified).toEqual(['resolved box-offline SN-0001']);
  });

  it('a battery alert told before the disconnection that clears during it is notified resolved after the reconnection', () => {
    const h = new Harness();
    expect(h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'inactive'), ev(BATTERY, 'SN-0001', 'active')]).notified).toEqual(['firing battery-low SN-0001']);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0001', 'inactive')]).notified).toEqual(['firing box-offline SN-0001']);
    expect(h.status(key('battery-low', 'SN-0001'))).toBe('resolved');
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'inactive'), ev(BATTERY, 'SN-0001', 'inactive')]).notified).toEqual([
      'resolved battery-low SN-0001',
      'resolved box-offline SN-0001',
    ]);
  });

  it('only the same box, only firing sources, only the listed kinds', () => {
    const h = new Harness();
    const results = (offline: 'active' | 'inactive'): RuleEvaluation[] => [
      ev(OFFLINE, 'SN-0001', offline), // for 2m: pending at first
      ev(BATTERY, 'SN-0001', 'active'),
      ev(BATTERY, 'SN-0002', 'active'),
      ev(FIRMWARE, 'SN-0001', 'active'),
    ];
    // The disconnected alert is only pending: nothing is inhibited yet.
    expect(h.after(0, results('active')).notified).toEqual(['firing battery-low SN-0001', 'firing battery-low SN-0002', 'firing firmware SN-0001']);
    // Now it fires: the battery alert of SN-0001 repeats no more, the others are unaffected.
    h.ctx.repeatIntervalMs = 2 * MIN;
    const r = h.after(2 * MIN, results('active'));
    expect(r.notified).toEqual(['repeat battery-low SN-0002', 'firing box-offline SN-0001', 'repeat firmware SN-0001']);
  });

  it('inhibit: false notifies everything', () => {
    const h = new Harness();
    h.ctx.inhibit = false;
    expect(h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0001', 'active')]).notified).toEqual([
      'firing battery-low SN-0001',
      'firing box-offline SN-0001',
    ]);
  });
});

describe('engine: silences', () => {
  const silence = (id: string, from: number, to: number, matchers: { boxes?: string[]; rules?: string[] }) => ({
    id,
    matchers,
    startsAt: T0 + from,
    endsAt: T0 + to,
    comment: 'maintenance',
  });

  it('an alert firing under a silence is recorded, not notified, and notified when the silence ends', () => {
    const h = new Harness();
    h.silences = [silence('s1', 0, 10 * MIN, { boxes: ['SN-00*'] })];
    const r = h.after(0, [ev(OFFLINE_NOW, 'SN-0042', 'active')]);
    expect(r.notified).toEqual([]);
    expect(r.result.transitions).toMatchObject([{ from: 'inactive', to: 'firing', heldBack: 'silenced', heldBy: ['s1'] }]);
    expect(h.after(10 * MIN - 1, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).notified).toEqual([]);
    // The silence ends at endsAt (exclusive): the first evaluation from then on notifies.
    const end = h.after(1, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).result.notifications;
    expect(end).toMatchObject([{ type: 'firing', serial: 'SN-0042', firingSince: T0, createdAt: T0 + 10 * MIN }]);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).notified).toEqual([]);
  });

  it('an alert that fires and resolves within a silence is never notified', () => {
    const h = new Harness();
    h.silences = [silence('s1', 0, HOUR, { rules: ['box-offline'] })];
    const notified = [
      ...h.after(0, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).notified,
      ...h.after(MIN, [ev(OFFLINE_NOW, 'SN-0042', 'inactive')]).notified,
      ...h.after(2 * HOUR, [ev(OFFLINE_NOW, 'SN-0042', 'inactive')]).notified,
    ];
    expect(notified).toEqual([]);
    expect(h.states.size).toBe(0);
  });

  it('told firing, then silenced: no repeats; resolved during the silence: told when it ends', () => {
    const h = new Harness();
    h.ctx.repeatIntervalMs = HOUR;
    expect(h.after(0, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).notified).toEqual(['firing box-offline SN-0042']);
    h.silences = [silence('s1', MIN, 3 * HOUR, { boxes: ['SN-0042'], rules: ['box-offline'] })];
    expect(h.after(2 * HOUR, [ev(OFFLINE_NOW, 'SN-0042', 'active')]).notified).toEqual([]);
    expect(h.after(MIN, [ev(OFFLINE_NOW, 'SN-0042', 'inactive')]).notified).toEqual([]);
    expect(h.after(MIN, [ev(OFFLINE_NOW, 'SN-0042', 'inactive')]).notified).toEqual([]);
    expect(h.status(key('box-offline', 'SN-0042'))).toBe('inactive');
    const r = h.after(HOUR, [ev(OFFLINE_NOW, 'SN-0042', 'inactive')]).result;
    expect(r.notifications).toMatchObject([{ type: 'resolved', resolvedAt: T0 + 2 * HOUR + MIN }]);
    expect(h.states.size).toBe(0);
  });

  it('a silence matches by glob and rule together; other boxes and rules are notified', () => {
    const h = new Harness();
    h.silences = [silence('s1', 0, HOUR, { boxes: ['SN-1*', 'SN-2?'], rules: ['battery-low'] })];
    const r = h.after(0, [
      ev(BATTERY, 'SN-100', 'active'),
      ev(BATTERY, 'SN-21', 'active'),
      ev(BATTERY, 'SN-211', 'active'),
      ev(BATTERY, 'SN-300', 'active'),
      ev(OFFLINE_NOW, 'SN-100', 'active'),
    ]);
    expect(r.notified).toEqual(['firing battery-low SN-211', 'firing battery-low SN-300', 'firing box-offline SN-100']);
  });

  it('a silence that has not started yet silences nothing; one by rule name silences a gateway alert', () => {
    const h = new Harness();
    h.silences = [silence('later', HOUR, 2 * HOUR, { boxes: ['*'] }), silence('gw', 0, HOUR, { rules: ['gateway_*'] })];
    const down: GatewayCycle = { outcome: 'failed', errorCode: 'unauthorized' };
    const r = h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ...gatewayEvaluations({ outcome: 'ok', errorCode: null })]);
    expect(r.notified).toEqual(['firing box-offline SN-0001']);
    const g = h.after(CYCLE, gatewayEvaluations(down), { gatewayDown: true });
    expect(g.notified).toEqual([]);
    expect(g.transitions).toEqual(['gateway_unauthorized inactive>firing (silenced)']);
  });
});

describe('engine: gateway alerts and gateway down', () => {
  const cycleOf = (errorCode: string | null): GatewayCycle => ({ outcome: errorCode === null ? 'ok' : 'failed', errorCode });

  /** One cycle with the gateway result and per-box results (which the engine ignores while it is down). */
  function gatewayCycle(h: Harness, errorCode: string | null, boxes: RuleEvaluation[]): ReturnType<Harness['after']> {
    const c = cycleOf(errorCode);
    return h.after(CYCLE, [...gatewayEvaluations(c), ...boxes], { gatewayDown: isGatewayDown(c) });
  }

  it('503 for a while: one gateway_unreachable after 3 failed cycles, per-box states frozen, no per-box alert', () => {
    const h = new Harness();
    const box = (c: 'active' | 'inactive'): RuleEvaluation[] => [ev(OFFLINE, 'SN-0001', c), ev(OFFLINE_NOW, 'SN-0002', c)];
    expect(gatewayCycle(h, null, box('active')).notified).toEqual(['firing box-offline SN-0002']);
    expect(h.status(key('box-offline', 'SN-0001'))).toBe('pending');
    const frozen = new Map(h.states);

    const log: string[] = [];
    for (let i = 1; i <= 6; i++) {
      // Whatever the per-box rules say while the gateway is down is ignored.
      const r = gatewayCycle(h, 'unavailable', box(i % 2 ? 'inactive' : 'active'));
      log.push(`${i}: ${r.transitions.join(', ')} | ${r.notified.join(', ')}`);
    }
    expect(log).toEqual([
      '1: gateway_unreachable inactive>pending | ',
      '2:  | ',
      '3: gateway_unreachable pending>firing | firing gateway_unreachable',
      '4:  | ',
      '5:  | ',
      '6:  | ',
    ]);
    for (const [k, s] of frozen) expect(h.states.get(k)).toEqual(s);

    // Back: the gateway alert resolves; SN-0001's pending timer kept running, so it fires now.
    const back = gatewayCycle(h, null, box('active'));
    expect(back.notified).toEqual(['firing box-offline SN-0001', 'resolved gateway_unreachable']);
  });

  it('two failed cycles then a good one: gateway_unreachable never fires', () => {
    const h = new Harness();
    const notified = [null, 'unavailable', 'rate_limited', null, 'unavailable', null].flatMap((code) => gatewayCycle(h, code, []).notified);
    expect(notified).toEqual([]);
  });

  it('unauthorized fires at once and resolves when the key works again; unreachable meanwhile leaves it firing', () => {
    const h = new Harness();
    const log = [null, 'unauthorized', 'unavailable', 'unavailable', 'unavailable', 'unauthorized', null].map((code) =>
      gatewayCycle(h, code, []).notified.join(', '),
    );
    expect(log).toEqual([
      '',
      'firing gateway_unauthorized',
      '',
      '',
      'firing gateway_unreachable',
      'resolved gateway_unreachable',
      'resolved gateway_unauthorized',
    ]);
    expect([...h.states.values()].map((a) => `${a.rule} ${a.status}`)).toEqual(['gateway_unauthorized resolved']);
    gatewayCycle(h, null, []);
    expect(h.states.size).toBe(0);
  });

  it('a schema failure fires gateway_schema at once', () => {
    const h = new Harness();
    expect(gatewayCycle(h, 'schema', []).notified).toEqual(['firing gateway_schema']);
    expect(h.states.get(key('gateway_schema', ''))?.key).toBe('gateway_schema');
  });

  it('unreachable_after is configurable', () => {
    const h = new Harness();
    const notified = [1, 2, 3, 4, 5].flatMap(() =>
      h.after(CYCLE, gatewayEvaluations(cycleOf('unavailable'), { unreachableAfter: 5 }), { gatewayDown: true }).notified,
    );
    expect(notified).toEqual(['firing gateway_unreachable']);
    expect(h.states.get(GATEWAY_UNREACHABLE)?.severity).toBe('critical');
    expect(h.states.has(GATEWAY_UNAUTHORIZED)).toBe(false);
  });

  it('no per-box repeats and no end-of-silence notifications while the gateway is down', () => {
    const h = new Harness();
    h.ctx.repeatIntervalMs = MIN;
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active')]);
    const r = h.after(10 * MIN, [ev(OFFLINE_NOW, 'SN-0001', 'active')], { gatewayDown: true });
    expect(r.notified).toEqual([]);
    expect(h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active')]).notified).toEqual(['repeat box-offline SN-0001']);
  });
});

describe('engine: restarts, determinism, bookkeeping', () => {
  it('after a restart from stored rows, a firing alert is neither notified again nor forgotten', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0002', 'active')]);
    const rows = JSON.parse(JSON.stringify([...h.states.values()])) as AlertState[];

    const restarted = new Harness();
    restarted.clock.set(h.clock.now());
    restarted.states = statesFromRows(rows);
    expect(restarted.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0002', 'active')]).notified).toEqual([]);
    // Resolved while the daemon was down: resolved and notified on the first good cycle.
    const r = restarted.after(HOUR, [ev(OFFLINE_NOW, 'SN-0001', 'inactive'), ev(BATTERY, 'SN-0002', 'active')]);
    expect(r.notified).toEqual(['resolved box-offline SN-0001']);
  });

  it('the result does not depend on the order of the evaluations or of the previous map', () => {
    const evs = [ev(BATTERY, 'SN-0003', 'active'), ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0001', 'active'), ev(SIGNAL, 'SN-0002', 'active')];
    const ctx = { now: T0, gatewayDown: false, silences: [], inhibit: true, repeatIntervalMs: HOUR };
    const a = evaluateCycle(new Map(), evs, ctx);
    const b = evaluateCycle(new Map([...a.states].reverse()), [...evs].reverse(), { ...ctx, now: T0 + MIN });
    const c = evaluateCycle(a.states, evs, { ...ctx, now: T0 + MIN });
    expect(evaluateCycle(new Map(), [...evs].reverse(), ctx)).toEqual(a);
    expect(b).toEqual(c);
    expect(a.notifications.map((n) => n.key)).toEqual([...a.notifications.map((n) => n.key)].sort());
  });

  it('does not modify its inputs', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active')]);
    const prev = h.states;
    const snapshot = JSON.stringify([...prev]);
    evaluateCycle(prev, [ev(OFFLINE_NOW, 'SN-0001', 'inactive')], { now: T0 + MIN, gatewayDown: false, silences: [], inhibit: true, repeatIntervalMs: 0 });
    expect(JSON.stringify([...prev])).toBe(snapshot);
  });

  it('two evaluations of one alert in a cycle are a programming error', () => {
    const h = new Harness();
    expect(() => h.cycle([ev(BATTERY, 'SN-1', 'active'), ev(BATTERY, 'SN-1', 'inactive')])).toThrow(/two evaluations of rule "battery-low" for box "SN-1"/);
  });

  it('alerts without an evaluation stay as they are; with ruleNames, those of removed rules resolve and go', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(BATTERY, 'SN-0002', 'active')]);
    expect(h.after(CYCLE, []).transitions).toEqual([]);
    const r = h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active')], { ruleNames: ['box-offline'] });
    expect(r.transitions).toEqual(['battery-low SN-0002 firing>resolved']);
    expect(r.notified).toEqual(['resolved battery-low SN-0002']);
    const gone = h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active')], { ruleNames: ['box-offline'] });
    expect(gone.result.dropped).toEqual([key('battery-low', 'SN-0002')]);
    expect([...h.states.keys()]).toEqual([key('box-offline', 'SN-0001')]);
  });

  it('a severity change in the configuration reaches the stored alert', () => {
    const h = new Harness();
    h.after(0, [ev(BATTERY, 'SN-1', 'active')]);
    h.after(CYCLE, [ev({ ...BATTERY, severity: 'critical' }, 'SN-1', 'active')]);
    expect(h.states.get(key('battery-low', 'SN-1'))?.severity).toBe('critical');
  });
});

describe('engine: alerts of boxes that left the fleet', () => {
  it('an alert whose box is not among the fleet serials resolves at once; one whose box is there but not evaluated stays as it was', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active'), ev(OFFLINE_NOW, 'SN-0002', 'active'), ev(FIRMWARE, '', 'active')]);
    expect([h.status(key('box-offline', 'SN-0001')), h.status(key('box-offline', 'SN-0002'))]).toEqual(['firing', 'firing']);
    // No evaluations this cycle; SN-0001 was forgotten (not in the fleet), SN-0002 still is.
    let reads = 0;
    const serials = { *[Symbol.iterator]() { reads += 1; yield 'SN-0002'; } };
    const r = h.after(CYCLE, [], { serials });
    expect(r.notified).toEqual(['resolved box-offline SN-0001']);
    expect(h.status(key('box-offline', 'SN-0001'))).toBe('resolved');
    expect(h.status(key('box-offline', 'SN-0002'))).toBe('firing');
    expect(h.status(key('firmware', ''))).toBe('firing'); // a fleet alert is no box's
    expect(reads).toBe(1); // read once, however many alerts ask
  });

  it('a cycle that evaluates every alert it holds does not read the fleet serials at all', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE_NOW, 'SN-0001', 'active')]);
    let reads = 0;
    const serials = { *[Symbol.iterator]() { reads += 1; yield 'SN-0001'; } };
    h.after(CYCLE, [ev(OFFLINE_NOW, 'SN-0001', 'active')], { serials });
    expect(h.status(key('box-offline', 'SN-0001'))).toBe('firing');
    expect(reads).toBe(0);
  });
});
