import { describe, expect, it } from 'vitest';
import { evaluateCycle } from '../../src/alerts/engine.js';
import type { NotifierRoute, RoutedIntent } from '../../src/alerts/group.js';
import { fanOut, planGroups, routes } from '../../src/alerts/group.js';
import { toAlertItem } from '../../src/alerts/message.js';
import type { NotificationIntent, Severity } from '../../src/alerts/types.js';
import { HOUR, SEC, T0, ev, rule } from './harness.js';

const intent = (severity: Severity, ruleName = 'r', serial = 'SN-1'): Pick<NotificationIntent, 'severity' | 'rule' | 'serial'> => ({ severity, rule: ruleName, serial });

describe('routes', () => {
  it.each([
    { n: {}, i: intent('info'), ok: true },
    { n: { minSeverity: 'warning' }, i: intent('critical'), ok: true },
    { n: { minSeverity: 'warning' }, i: intent('warning'), ok: true },
    { n: { minSeverity: 'warning' }, i: intent('info'), ok: false },
    { n: { minSeverity: 'critical' }, i: intent('warning'), ok: false },
    { n: { minSeverity: 'info' }, i: intent('info'), ok: true },
    { n: { rules: ['box-offline'] }, i: intent('critical', 'battery-low'), ok: false },
    { n: { rules: ['box-offline', 'battery-*'] }, i: intent('critical', 'battery-low'), ok: true },
    { n: { rules: [] }, i: intent('critical', 'battery-low'), ok: true },
    { n: { boxes: ['SN-1*'] }, i: intent('info', 'r', 'SN-100'), ok: true },
    { n: { boxes: ['SN-1*'] }, i: intent('info', 'r', 'SN-200'), ok: false },
    { n: { boxes: ['SN-1*'] }, i: intent('critical', 'gateway_unreachable', ''), ok: true },
    { n: { minSeverity: 'critical', boxes: ['SN-1*'], rules: ['r'] }, i: intent('critical', 'r', 'SN-1'), ok: true },
    { n: { minSeverity: 'critical', boxes: ['SN-1*'], rules: ['r'] }, i: intent('critical', 'r', 'SN-2'), ok: false },
  ] as { n: NotifierRoute; i: ReturnType<typeof intent>; ok: boolean }[])('%j', ({ n, i, ok }) => {
    expect(routes(n, i)).toBe(ok);
  });
});

describe('planGroups', () => {
  const item = (notifier: string, createdAt: number, id = ''): { notifier: string; createdAt: number; id: string } => ({ notifier, createdAt, id });

  it('nothing is ready before group_wait; everything at once exactly at group_wait', () => {
    const pending = [item('mail', T0, 'a'), item('mail', T0 + 10 * SEC, 'b')];
    expect(planGroups(pending, T0 + 30 * SEC - 1, 30 * SEC)).toEqual({ ready: [], waiting: pending, nextReadyAt: T0 + 30 * SEC });
    expect(planGroups(pending, T0 + 30 * SEC, 30 * SEC)).toEqual({ ready: [{ notifier: 'mail', items: pending }], waiting: [], nextReadyAt: null });
  });

  it('each notifier is planned on its own; items are oldest first', () => {
    const pending = [item('slack', T0 + 20 * SEC, 's'), item('mail', T0 + 5 * SEC, 'm2'), item('mail', T0, 'm1')];
    const plan = planGroups(pending, T0 + 40 * SEC, 30 * SEC);
    expect(plan.ready).toEqual([{ notifier: 'mail', items: [pending[2], pending[1]] }]);
    expect(plan.waiting).toEqual([pending[0]]);
    expect(plan.nextReadyAt).toBe(T0 + 50 * SEC);
  });

  it('group_wait 0 sends at once; maxItems splits a large batch', () => {
    const pending = [1, 2, 3, 4, 5].map((i) => item('mail', T0, String(i)));
    expect(planGroups(pending, T0, 0).ready).toHaveLength(1);
    expect(planGroups(pending, T0, 0, { maxItems: 2 }).ready.map((b) => b.items.map((i) => i.id))).toEqual([['1', '2'], ['3', '4'], ['5']]);
  });

  it('30 boxes disconnecting together become one message per notifier', () => {
    const offline = rule('box-offline', 'disconnected', { severity: 'critical' });
    const battery = rule('battery-low', 'low_battery', { severity: 'info' });
    const serials = Array.from({ length: 30 }, (_, i) => `SN-${String(i + 1).padStart(4, '0')}`);
    // The boxes drop in over three cycles, 10 s apart (a site power cut).
    let states = new Map();
    const outbox: RoutedIntent[] = [];
    const notifiers = [
      { name: 'ops-mail' },
      { name: 'ops-slack', minSeverity: 'warning' as const },
      { name: 'site-b', boxes: ['SN-002*'] },
    ];
    for (let c = 0; c < 3; c++) {
      const now = T0 + c * 10 * SEC;
      const evs = serials.map((s, i) => ev(offline, s, i % 3 <= c ? 'active' : 'inactive'));
      evs.push(ev(battery, 'SN-0001', c === 2 ? 'active' : 'inactive'));
      const r = evaluateCycle(states, evs, { now, gatewayDown: false, silences: [], inhibit: false, repeatIntervalMs: 4 * HOUR });
      states = r.states;
      outbox.push(...fanOut(r.notifications, notifiers));
    }
    expect(planGroups(outbox, T0 + 29 * SEC, 30 * SEC).ready).toEqual([]);
    const plan = planGroups(outbox, T0 + 30 * SEC, 30 * SEC);
    expect(plan.waiting).toEqual([]);
    expect(plan.ready.map((b) => `${b.notifier}: ${b.items.length}`)).toEqual(['ops-mail: 31', 'ops-slack: 30', 'site-b: 10']);
    const slack = plan.ready.find((b) => b.notifier === 'ops-slack');
    expect(new Set(slack?.items.map((i) => i.intent.serial))).toEqual(new Set(serials));
  });
});

describe('toAlertItem', () => {
  it('turns an intent and the box labels into a message item', () => {
    const base: NotificationIntent = {
      key: 'battery-low\u0000SN-1',
      rule: 'battery-low',
      kind: 'low_battery',
      serial: 'SN-1',
      severity: 'warning',
      type: 'resolved',
      createdAt: T0 + 60 * SEC,
      firingSince: T0,
      resolvedAt: T0 + 60 * SEC,
      value: 26,
      threshold: 'below 20% (clears above 25%)',
      summary: null,
    };
    expect(toAlertItem(base, { name: 'Lobby <B>', location: null })).toEqual({
      status: 'resolved',
      rule: 'battery-low',
      ruleKind: 'low_battery',
      severity: 'warning',
      serial: 'SN-1',
      boxName: 'Lobby <B>',
      location: null,
      value: 26,
      threshold: 'below 20% (clears above 25%)',
      since: T0,
      resolvedAt: T0 + 60 * SEC,
      summary: 'low battery',
    });
  });
});
