import { describe, expect, it } from 'vitest';
import type { Timing } from '../../src/alerts/state.js';
import { initialState, isAtRest, notifyStep, step } from '../../src/alerts/state.js';
import type { AlertState, AlertStatus, Condition } from '../../src/alerts/types.js';
import { MIN, SEC, T0, rule } from './harness.js';

const R = rule('box-offline', 'disconnected', { severity: 'critical' });

/**
 * Runs `steps` ("<seconds> <condition> <expected status>") through `step` and returns the
 * statuses and the transitions as "<seconds> <from>><to>".
 */
function run(timing: Timing, steps: string): { statuses: AlertStatus[]; transitions: string[]; final: AlertState } {
  let state = initialState(R, 'SN-0001', T0);
  const statuses: AlertStatus[] = [];
  const transitions: string[] = [];
  for (const line of steps.split(';').map((s) => s.trim()).filter(Boolean)) {
    const [sec, cond] = line.split(/\s+/) as [string, Condition];
    const now = T0 + Number(sec) * SEC;
    const { next, transition } = step(state, { condition: cond, now }, timing);
    state = next;
    statuses.push(state.status);
    if (transition) transitions.push(`${sec} ${transition.from}>${transition.to}`);
  }
  return { statuses, transitions, final: state };
}

function expected(steps: string): AlertStatus[] {
  return steps
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => s.split(/\s+/)[3] as AlertStatus);
}

const NO_FOR: Timing = { forMs: 0, keepFiringForMs: 0 };
const FOR_1M: Timing = { forMs: MIN, keepFiringForMs: 0 };
const KEEP_1M: Timing = { forMs: 0, keepFiringForMs: MIN };

describe('step: state tables (cycles every 30 s; "<s> <condition> -> <status>")', () => {
  const cases: { name: string; timing: Timing; steps: string; transitions: string[] }[] = [
    {
      name: 'for 0: fail, ok -> firing at once, resolved, then inactive',
      timing: NO_FOR,
      steps: '0 active -> firing; 30 inactive -> resolved; 60 inactive -> inactive',
      transitions: ['0 inactive>firing', '30 firing>resolved', '60 resolved>inactive'],
    },
    {
      name: 'for 1m: fail, fail, fail, ok -> pending, pending, firing, resolved',
      timing: FOR_1M,
      steps: '0 active -> pending; 30 active -> pending; 60 active -> firing; 90 inactive -> resolved; 120 inactive -> inactive',
      transitions: ['0 inactive>pending', '60 pending>firing', '90 firing>resolved', '120 resolved>inactive'],
    },
    {
      name: 'for 1m + 1 ms: not yet firing at 1m (the boundary is inclusive, see the case above)',
      timing: { forMs: 60_001, keepFiringForMs: 0 },
      steps: '0 active -> pending; 60 active -> pending; 90 active -> firing',
      transitions: ['0 inactive>pending', '90 pending>firing'],
    },
    {
      name: 'pending that goes inactive returns to inactive (and the timer restarts)',
      timing: FOR_1M,
      steps: '0 active -> pending; 30 inactive -> inactive; 60 active -> pending; 90 active -> pending; 120 active -> firing',
      transitions: ['0 inactive>pending', '30 pending>inactive', '60 inactive>pending', '120 pending>firing'],
    },
    {
      name: 'unknown changes nothing while inactive, pending, firing and resolved',
      timing: FOR_1M,
      steps:
        '0 unknown -> inactive; 30 active -> pending; 60 unknown -> pending; 90 active -> firing; 120 unknown -> firing; ' +
        '150 inactive -> resolved; 180 unknown -> resolved; 210 inactive -> inactive',
      transitions: ['30 inactive>pending', '90 pending>firing', '150 firing>resolved', '210 resolved>inactive'],
    },
    {
      name: 'the pending timer keeps running through unknown, and fires at the next active evaluation',
      timing: FOR_1M,
      steps: '0 active -> pending; 30 unknown -> pending; 60 unknown -> pending; 90 unknown -> pending; 120 active -> firing',
      transitions: ['0 inactive>pending', '120 pending>firing'],
    },
    {
      name: 'an unknown gap never resolves a firing alert',
      timing: NO_FOR,
      steps: '0 active -> firing; 30 unknown -> firing; 3600 unknown -> firing; 3630 active -> firing',
      transitions: ['0 inactive>firing'],
    },
    {
      name: 'keep_firing_for 1m holds through a short gap',
      timing: KEEP_1M,
      steps: '0 active -> firing; 30 inactive -> firing; 60 active -> firing; 90 inactive -> firing; 120 inactive -> firing',
      transitions: ['0 inactive>firing'],
    },
    {
      name: 'keep_firing_for 1m resolves exactly 1m after the condition cleared',
      timing: KEEP_1M,
      steps: '0 active -> firing; 30 inactive -> firing; 60 inactive -> firing; 90 inactive -> resolved',
      transitions: ['0 inactive>firing', '90 firing>resolved'],
    },
    {
      name: 'keep_firing_for restarts when the condition comes back',
      timing: KEEP_1M,
      steps: '0 active -> firing; 30 inactive -> firing; 60 active -> firing; 90 inactive -> firing; 120 inactive -> firing; 150 inactive -> resolved',
      transitions: ['0 inactive>firing', '150 firing>resolved'],
    },
    {
      name: 'keep_firing_for does not hold a pending alert',
      timing: { forMs: MIN, keepFiringForMs: MIN },
      steps: '0 active -> pending; 30 inactive -> inactive',
      transitions: ['0 inactive>pending', '30 pending>inactive'],
    },
    {
      name: 'resolved then active again starts a new episode (pending with for > 0)',
      timing: FOR_1M,
      steps: '0 active -> pending; 60 active -> firing; 90 inactive -> resolved; 120 active -> pending; 180 active -> firing',
      transitions: ['0 inactive>pending', '60 pending>firing', '90 firing>resolved', '120 resolved>pending', '180 pending>firing'],
    },
    {
      name: 'resolved then active again with for 0 fires straight away',
      timing: NO_FOR,
      steps: '0 active -> firing; 30 inactive -> resolved; 60 active -> firing',
      transitions: ['0 inactive>firing', '30 firing>resolved', '60 resolved>firing'],
    },
    {
      name: 'forCycles 3 (gateway_unreachable): fires at the third consecutive active evaluation; unknown does not count',
      timing: { forMs: 0, keepFiringForMs: 0, forCycles: 3 },
      steps: '0 active -> pending; 30 active -> pending; 45 unknown -> pending; 60 active -> firing; 90 inactive -> resolved',
      transitions: ['0 inactive>pending', '60 pending>firing', '90 firing>resolved'],
    },
    {
      name: 'forCycles 3: an inactive evaluation resets the count',
      timing: { forMs: 0, keepFiringForMs: 0, forCycles: 3 },
      steps: '0 active -> pending; 30 active -> pending; 60 inactive -> inactive; 90 active -> pending; 120 active -> pending; 150 active -> firing',
      transitions: ['0 inactive>pending', '60 pending>inactive', '90 inactive>pending', '150 pending>firing'],
    },
  ];

  it.each(cases)('$name', ({ timing, steps, transitions }) => {
    const r = run(timing, steps);
    expect(r.statuses).toEqual(expected(steps));
    expect(r.transitions).toEqual(transitions);
  });

  it('unknown returns the very same state object', () => {
    const s = initialState(R, 'SN-0001', T0);
    expect(step(s, { condition: 'unknown', now: T0 + MIN, value: 5 }, NO_FOR).next).toBe(s);
  });

  it('records firingSince, resolvedAt and the latest value, threshold and summary', () => {
    let s = initialState(rule('battery-low', 'low_battery'), 'SN-0002', T0);
    s = step(s, { condition: 'active', now: T0 + MIN, value: 12, threshold: 20, summary: 'battery 12% < 20%' }, FOR_1M).next;
    s = step(s, { condition: 'active', now: T0 + 2 * MIN, value: 11 }, FOR_1M).next;
    expect(s).toMatchObject({ status: 'firing', firingSince: T0 + 2 * MIN, value: 11, threshold: 20, summary: 'battery 12% < 20%' });
    const { next, transition } = step(s, { condition: 'inactive', now: T0 + 3 * MIN, value: 26, threshold: 25, summary: 'battery 26% > 25%' }, FOR_1M);
    expect(next).toMatchObject({ status: 'resolved', resolvedAt: T0 + 3 * MIN, firingSince: T0 + 2 * MIN, value: 26 });
    expect(transition).toMatchObject({ key: 'battery-low\u0000SN-0002', serial: 'SN-0002', from: 'firing', to: 'resolved', at: T0 + 3 * MIN, value: 26, summary: 'battery 26% > 25%' });
  });

  it('states survive a JSON round trip unchanged (they are stored as rows)', () => {
    const r = run(KEEP_1M, '0 active; 30 inactive');
    expect(JSON.parse(JSON.stringify(r.final))).toEqual(r.final);
  });
});

describe('notifyStep: what people are told', () => {
  const firing = (over: Partial<AlertState> = {}): AlertState => ({
    ...initialState(R, 'SN-0001', T0),
    status: 'firing',
    firingSince: T0,
    ...over,
  });
  const REPEAT = 4 * 60 * MIN;

  it.each([
    { name: 'firing, not yet told -> firing', state: firing(), now: T0, held: false, type: 'firing' },
    { name: 'firing, not yet told, held back -> nothing', state: firing(), now: T0, held: true, type: undefined },
    { name: 'firing, told, before the repeat interval -> nothing', state: firing({ notifiedFiring: true, lastNotifiedAt: T0 }), now: T0 + REPEAT - 1, held: false, type: undefined },
    { name: 'firing, told, exactly one repeat interval later -> repeat', state: firing({ notifiedFiring: true, lastNotifiedAt: T0 }), now: T0 + REPEAT, held: false, type: 'repeat' },
    { name: 'firing, told, repeat due but held back -> nothing', state: firing({ notifiedFiring: true, lastNotifiedAt: T0 }), now: T0 + REPEAT, held: true, type: undefined },
    { name: 'resolved, firing was told -> resolved', state: firing({ status: 'resolved', notifiedFiring: true, resolvedAt: T0 + MIN }), now: T0 + MIN, held: false, type: 'resolved' },
    { name: 'resolved, firing never told -> nothing', state: firing({ status: 'resolved', resolvedAt: T0 + MIN }), now: T0 + MIN, held: false, type: undefined },
    { name: 'resolved, told, held back -> nothing (owed)', state: firing({ status: 'resolved', notifiedFiring: true }), now: T0 + MIN, held: true, type: undefined },
    { name: 'inactive but still owed a resolved -> resolved', state: firing({ status: 'inactive', notifiedFiring: true, resolvedAt: T0 }), now: T0 + MIN, held: false, type: 'resolved' },
    { name: 'pending -> nothing', state: firing({ status: 'pending', firingSince: null }), now: T0, held: false, type: undefined },
  ])('$name', ({ state, now, held, type }) => {
    const { next, intent } = notifyStep(state, { now, heldBack: held, repeatIntervalMs: REPEAT });
    expect(intent?.type).toBe(type);
    if (type === 'firing' || type === 'repeat') expect(next).toMatchObject({ notifiedFiring: true, lastNotifiedAt: now });
    if (type === 'resolved') expect(next.notifiedFiring).toBe(false);
    if (type === undefined) expect(next).toBe(state);
  });

  it('a repeat interval of 0 never repeats', () => {
    const s = firing({ notifiedFiring: true, lastNotifiedAt: T0 });
    expect(notifyStep(s, { now: T0 + 1000 * REPEAT, heldBack: false, repeatIntervalMs: 0 }).intent).toBeUndefined();
  });

  it('the intent carries what a message needs', () => {
    const s = firing({ value: 12, threshold: 20, summary: 'battery 12% < 20%', severity: 'warning' });
    expect(notifyStep(s, { now: T0 + 5, heldBack: false, repeatIntervalMs: 0 }).intent).toEqual({
      key: 'box-offline\u0000SN-0001',
      rule: 'box-offline',
      kind: 'disconnected',
      serial: 'SN-0001',
      severity: 'warning',
      type: 'firing',
      createdAt: T0 + 5,
      firingSince: T0,
      resolvedAt: null,
      value: 12,
      threshold: 20,
      summary: 'battery 12% < 20%',
    });
  });

  it('isAtRest: only an inactive alert that owes nothing', () => {
    const s = initialState(R, 'SN-0001', T0);
    expect(isAtRest(s)).toBe(true);
    expect(isAtRest({ ...s, notifiedFiring: true })).toBe(false);
    expect(isAtRest({ ...s, status: 'pending' })).toBe(false);
  });
});
