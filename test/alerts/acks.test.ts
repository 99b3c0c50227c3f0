/**
 * Acknowledgements in the alert engine (src/alerts/acks.ts): an ack stops the repeats of the
 * episode it was given for, and ends when the alert resolves (the resolve is still notified and
 * carries the ack), its severity rises, or `until` passes; a new episode is not acknowledged.
 * And `ackFromRequest`, the one check behind `boxwatch ack` and `POST /api/acks`.
 */
import { describe, expect, it } from 'vitest';
import { ackFromRequest, ackInEffect, findAlert, type Ack } from '../../src/alerts/acks.js';
import { initialState } from '../../src/alerts/state.js';
import { toAlertItem } from '../../src/alerts/message.js';
import { alertId, alertKey, type AlertState } from '../../src/alerts/types.js';
import { UsageError } from '../../src/errors.js';
import { HOUR, Harness, MIN, T0, ev, rule } from './harness.js';

const OFFLINE = rule('box-offline', 'disconnected', { severity: 'warning' });
const KEY = alertKey('box-offline', 'SN-0001');

function ackOf(h: Harness, overrides: Partial<Ack> = {}): Ack {
  const state = h.states.get(KEY);
  if (!state || state.firingSince === null) throw new Error('not firing');
  return { id: 1, key: KEY, rule: 'box-offline', serial: 'SN-0001', firingSince: state.firingSince, severity: state.severity, by: 'alice', comment: 'on site', at: h.clock.now(), until: null, ...overrides };
}

/** Runs `hours` hours of 30-minute cycles with the alert active; returns the notifications as `2h repeat`. */
function run(h: Harness, hours: number, acks: Map<string, Ack>, r = OFFLINE): string[] {
  const out: string[] = [];
  for (let i = 0; i < hours * 2; i++) {
    const { result } = h.after(30 * MIN, [ev(r, 'SN-0001', 'active')], { acks });
    for (const n of result.notifications) out.push(`${(h.clock.now() - T0) / HOUR}h ${n.type}`);
  }
  return out;
}

describe('an acknowledged alert', () => {
  it('without an ack repeats every repeat_interval (the baseline)', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE, 'SN-0001', 'active')]);
    expect(run(h, 12, new Map())).toEqual(['4h repeat', '8h repeat', '12h repeat']);
  });

  it('stops repeating until it resolves; the resolve is still notified, and says who acknowledged it', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE, 'SN-0001', 'active')]);
    const acks = new Map([[KEY, ackOf(h)]]);
    expect(run(h, 12, acks)).toEqual([]);
    const { result } = h.after(MIN, [ev(OFFLINE, 'SN-0001', 'inactive')], { acks });
    expect(result.notifications.map((n) => n.type)).toEqual(['resolved']);
    const item = toAlertItem(result.notifications[0]!, {}, acks.get(KEY));
    expect(item).toMatchObject({ status: 'resolved', ack: { by: 'alice', comment: 'on site', until: null } });
  });

  it('repeats again once the ack expires (--for)', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE, 'SN-0001', 'active')]);
    const acks = new Map([[KEY, ackOf(h, { until: T0 + 6 * HOUR })]]);
    // 4h is covered by the ack; at 6h it has expired and the repeat (due since 4h) goes out at once.
    expect(run(h, 12, acks)).toEqual(['6h repeat', '10h repeat']);
  });

  it('repeats again when its severity rises above the acknowledged one', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE, 'SN-0001', 'active')]);
    const acks = new Map([[KEY, ackOf(h)]]);
    expect(run(h, 5, acks)).toEqual([]);
    // The rule is reconfigured as critical: the ack no longer covers it.
    expect(run(h, 4, acks, { ...OFFLINE, severity: 'critical' })).toEqual(['5.5h repeat']);
    expect(ackInEffect(acks.get(KEY), h.states.get(KEY)!, h.clock.now())).toBe(false);
    // A lower severity stays covered.
    expect(ackInEffect(acks.get(KEY), { ...h.states.get(KEY)!, severity: 'info' }, h.clock.now())).toBe(true);
  });

  it('a new firing episode is not acknowledged: it is notified and repeats', () => {
    const h = new Harness();
    h.after(0, [ev(OFFLINE, 'SN-0001', 'active')]);
    const acks = new Map([[KEY, ackOf(h)]]);
    h.after(MIN, [ev(OFFLINE, 'SN-0001', 'inactive')], { acks });
    const again = h.after(MIN, [ev(OFFLINE, 'SN-0001', 'active')], { acks });
    expect(again.notified).toEqual(['firing box-offline SN-0001']);
    expect(toAlertItem(again.result.notifications[0]!, {}, acks.get(KEY)).ack).toBeUndefined();
    expect(run(h, 5, acks)).toEqual([`${(2 * MIN + 4 * HOUR) / HOUR}h repeat`]);
  });
});

describe('ackFromRequest', () => {
  const h = new Harness();
  h.after(0, [ev(OFFLINE, 'SN-0001', 'active'), ev(rule('battery-low', 'low_battery', { forMs: HOUR }), 'SN-0002', 'active')]);
  const states = [...h.states.values()];
  const now = T0 + MIN;

  it('builds the ack of the firing episode, with --for as an end time', () => {
    expect(ackFromRequest({ alert: 'box-offline/SN-0001', comment: ' on site ', for: '4h', by: 'alice' }, states, now)).toEqual({
      key: KEY,
      rule: 'box-offline',
      serial: 'SN-0001',
      firingSince: T0,
      severity: 'warning',
      by: 'alice',
      comment: 'on site',
      at: now,
      until: now + 4 * HOUR,
    });
    expect(ackFromRequest({ alert: 'box-offline/SN-0001', comment: 'x', by: 'bob' }, states, now).until).toBeNull();
  });

  it('refuses what cannot be acknowledged, naming the problem', () => {
    const bad = (req: Partial<Parameters<typeof ackFromRequest>[0]>): string => {
      try {
        ackFromRequest({ alert: 'box-offline/SN-0001', comment: 'x', by: 'alice', ...req }, states, now);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(bad({ comment: '  ' })).toMatch(/--comment is required/);
    expect(bad({ for: 'soon' })).toMatch(/^--for: /);
    expect(bad({ alert: 'box-offline/SN-9999' })).toBe('no alert "box-offline/SN-9999" (firing: box-offline/SN-0001)');
    expect(bad({ alert: 'battery-low/SN-0002' })).toBe('alert "battery-low/SN-0002" is pending, not firing: only a firing alert can be acknowledged');
  });
});

describe('findAlert: the alert an ack names', () => {
  const firing = (rule: string, serial: string): AlertState => ({ ...initialState({ name: rule, kind: 'disconnected', severity: 'critical' }, serial, T0), status: 'firing', firingSince: T0 });
  const states = [firing('box-offline', 'acme/BX-1'), firing('box-offline', 'globex/BX-1'), firing('box-offline', 'acme/BX-2'), firing('battery-low', 'globex/BX-1'), firing('gateway_unauthorized', 'globex/'), firing('gateway_unreachable', '')];
  const id = (s: AlertState | undefined): string | undefined => (s === undefined ? undefined : alertId(s.rule, s.serial));

  it('by its id as `boxwatch alerts` shows it, or by its rule and box as every command names a box', () => {
    expect(id(findAlert('box-offline/acme/BX-1', undefined, states))).toBe('box-offline/acme/BX-1');
    expect(id(findAlert('box-offline', 'globex/BX-1', states))).toBe('box-offline/globex/BX-1');
    // a bare serial one account's alert of the rule has
    expect(id(findAlert('box-offline', 'BX-2', states))).toBe('box-offline/acme/BX-2');
    expect(id(findAlert('box-offline/BX-2', undefined, states))).toBe('box-offline/acme/BX-2');
    expect(id(findAlert('battery-low', 'BX-1', states))).toBe('battery-low/globex/BX-1');
    // gateway alerts: the rule alone (default account), `gateway`, the account, or as shown
    expect(id(findAlert('gateway_unreachable', undefined, states))).toBe('gateway_unreachable');
    expect(id(findAlert('gateway_unreachable', 'gateway', states))).toBe('gateway_unreachable');
    expect(id(findAlert('gateway_unauthorized', 'globex', states))).toBe('gateway_unauthorized/globex/');
    expect(id(findAlert('gateway_unauthorized', 'gateway (globex)', states))).toBe('gateway_unauthorized/globex/');
    expect(findAlert('box-offline', 'BX-9', states)).toBeUndefined();
  });

  it('a bare serial of several accounts is a usage error naming them; ackFromRequest says so too', () => {
    expect(() => findAlert('box-offline', 'BX-1', states)).toThrow(new UsageError('serial BX-1 is in several accounts: acme/BX-1, globex/BX-1 (write ACCOUNT/SERIAL)'));
    expect(() => ackFromRequest({ alert: 'box-offline/BX-1', comment: 'x', by: 'alice' }, states, T0)).toThrow(UsageError);
    expect(ackFromRequest({ alert: 'box-offline', box: 'acme/BX-1', comment: 'on site', by: 'alice' }, states, T0)).toMatchObject({ rule: 'box-offline', serial: 'acme/BX-1' });
  });
});
