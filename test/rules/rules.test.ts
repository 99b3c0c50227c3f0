import { describe, expect, it } from 'vitest';
import { evaluateRule, fleetContext, type Condition, type FleetContext } from '../../src/rules/index.js';
import { T0, box, rule } from './helpers.js';

const ctx: FleetContext = { now: T0, gatewayNow: T0, firmwareMajority: '2.10.0', calls: null };
const MIN = 60_000;

describe('disconnected', () => {
  const r = rule('disconnected');
  it.each<[string, Partial<Parameters<typeof box>[0]>, Condition]>([
    ['connected', { connected: true }, 'inactive'],
    ['not connected', { connected: false, battery: null }, 'active'],
    ['missing from the list', { connected: true, missingSince: T0 - MIN }, 'unknown'],
  ])('%s -> %s', (_t, state, expected) => {
    expect(evaluateRule(r, box(state), ctx, false).condition).toBe(expected);
  });

  it('an unknown box is unknown', () => {
    expect(evaluateRule(r, undefined, ctx, true).condition).toBe('unknown');
  });

  it('says what is wrong', () => {
    expect(evaluateRule(r, box({ connected: false }), ctx, false)).toMatchObject({ value: 'disconnected', summary: expect.stringMatching(/^disconnected/) });
  });
});

describe('low_battery with hysteresis (below 20, clear above 25)', () => {
  const r = rule('low_battery', 'below: 20, clear_above: 25');
  it.each<[number | null, boolean, Condition]>([
    [19, false, 'active'],
    [19, true, 'active'],
    [20, false, 'inactive'], // "below 20" is strict
    [22, true, 'active'], // fired before: holds until above 25
    [22, false, 'inactive'], // never fired: 22 is not below 20
    [25, true, 'active'],
    [26, true, 'inactive'],
    [26, false, 'inactive'],
    [0, false, 'active'],
    [null, false, 'unknown'], // no reading is not zero
    [null, true, 'unknown'],
  ])('battery %s, wasActive %s -> %s', (battery, wasActive, expected) => {
    expect(evaluateRule(r, box({ battery }), ctx, wasActive).condition).toBe(expected);
  });

  it('a disconnected box has no battery reading, whatever it last said', () => {
    expect(evaluateRule(r, box({ connected: false, battery: 5 }), ctx, false).condition).toBe('unknown');
    expect(evaluateRule(r, box({ connected: false, battery: 5 }), ctx, true).condition).toBe('unknown');
  });

  it('a battery wavering around the threshold fires once and clears once', () => {
    let active = false;
    const changes: string[] = [];
    for (const battery of [30, 21, 19, 21, 19, 22, 24, 20, 25, 26, 22, 19]) {
      const now: boolean = evaluateRule(r, box({ battery }), ctx, active).condition === 'active';
      if (now !== active) changes.push(`${now ? 'fire' : 'clear'}@${battery}`);
      active = now;
    }
    expect(changes).toEqual(['fire@19', 'clear@26', 'fire@19']);
  });

  it('the clear level defaults to below + 5', () => {
    const d = rule('low_battery', 'below: 30');
    expect(evaluateRule(d, box({ battery: 35 }), ctx, true).condition).toBe('active');
    expect(evaluateRule(d, box({ battery: 36 }), ctx, true).condition).toBe('inactive');
  });

  it('reports value and threshold', () => {
    expect(evaluateRule(r, box({ battery: 12 }), ctx, false)).toEqual({
      condition: 'active',
      value: 12,
      threshold: 'below 20% (clears above 25%)',
      summary: 'battery 12% (below 20%)',
    });
  });
});

describe('weak_signal with hysteresis (below -105 dBm, clear above -100 dBm)', () => {
  const r = rule('weak_signal', 'below_dbm: -105');
  it.each<[number | null, boolean, Condition]>([
    [-106, false, 'active'],
    [-105, false, 'inactive'],
    [-103, true, 'active'],
    [-103, false, 'inactive'],
    [-100, true, 'active'],
    [-99, true, 'inactive'],
    [-60, false, 'inactive'],
    [null, false, 'unknown'],
    [null, true, 'unknown'],
  ])('signal %s, wasActive %s -> %s', (signal, wasActive, expected) => {
    expect(evaluateRule(r, box({ signal }), ctx, wasActive).condition).toBe(expected);
  });

  it('an explicit clear level is used', () => {
    const c = rule('weak_signal', 'below_dbm: -105, clear_above_dbm: -90');
    expect(evaluateRule(c, box({ signal: -95 }), ctx, true).condition).toBe('active');
    expect(evaluateRule(c, box({ signal: -89 }), ctx, true).condition).toBe('inactive');
  });

  it('a disconnected box has no current signal', () => {
    expect(evaluateRule(r, box({ connected: false, signal: -120 }), ctx, false).condition).toBe('unknown');
  });
});

describe('stale (max_age 15m, measured on the gateway clock)', () => {
  const r = rule('stale', 'max_age: 15m');
  it.each<[string, { lastSeenAgo: number; connected?: boolean; skew: number | null }, Condition]>([
    ['recently seen', { lastSeenAgo: 1 * MIN, skew: 0 }, 'inactive'],
    ['exactly max_age', { lastSeenAgo: 15 * MIN, skew: 0 }, 'inactive'],
    ['older than max_age', { lastSeenAgo: 16 * MIN, skew: 0 }, 'active'],
    ['disconnected and old', { lastSeenAgo: 60 * MIN, connected: false, skew: 0 }, 'inactive'],
    // The gateway's clock is 1 h behind ours: by our clock the box looks 61 min stale, but it is fresh.
    ['gateway clock behind, fresh box', { lastSeenAgo: 1 * MIN, skew: -60 * MIN }, 'inactive'],
    // The gateway's clock is 1 h ahead: by our clock last_seen is in the future, but the box is stale.
    ['gateway clock ahead, stale box', { lastSeenAgo: 20 * MIN, skew: +60 * MIN }, 'active'],
    ['gateway clock ahead, fresh box', { lastSeenAgo: 1 * MIN, skew: +60 * MIN }, 'inactive'],
    ['gateway clock behind, stale box', { lastSeenAgo: 20 * MIN, skew: -60 * MIN }, 'active'],
    ['no Date header: our clock', { lastSeenAgo: 20 * MIN, skew: null }, 'active'],
  ])('%s -> %s', (_t, c, expected) => {
    // Gateway time is our time plus the skew; last_seen is stamped on the gateway's clock.
    const gatewayNow = c.skew === null ? null : T0 + c.skew;
    const lastSeen = (gatewayNow ?? T0) - c.lastSeenAgo;
    const result = evaluateRule(r, box({ lastSeen, connected: c.connected ?? true }), { ...ctx, gatewayNow }, false);
    expect(result.condition).toBe(expected);
  });

  it('reports the age in seconds', () => {
    expect(evaluateRule(r, box({ lastSeen: T0 - 20 * MIN }), ctx, false)).toMatchObject({
      value: 1200,
      threshold: 'last seen within 15m',
      summary: 'connected but last seen 20m ago (more than 15m)',
    });
  });

  it('a last_seen slightly after the Date header is age 0, not negative', () => {
    expect(evaluateRule(r, box({ lastSeen: T0 + 800 }), ctx, false)).toMatchObject({ condition: 'inactive', value: 0 });
  });
});

describe('firmware_drift', () => {
  const majority = rule('firmware_drift', 'expected: majority');
  it.each<[string, string | null, string, Condition]>([
    ['on the majority', '2.10.0', '2.10.0', 'inactive'],
    ['behind the majority', '2.10.0', '2.9.3', 'active'],
    ['ahead of the majority', '2.10.0', '2.11.0', 'active'],
    ['same version written differently', '2.10', '2.10.0', 'inactive'],
    ['no majority yet', null, '2.9.3', 'unknown'],
  ])('%s -> %s', (_t, fleetMajority, firmware, expected) => {
    expect(evaluateRule(majority, box({ firmware }), { ...ctx, firmwareMajority: fleetMajority }, false).condition).toBe(expected);
  });

  it('a fixed expected version', () => {
    const r = rule('firmware_drift', 'expected: 2.9.3');
    expect(evaluateRule(r, box({ firmware: '2.9.3' }), ctx, false).condition).toBe('inactive');
    expect(evaluateRule(r, box({ firmware: '2.10.0' }), ctx, false)).toMatchObject({
      condition: 'active',
      value: '2.10.0',
      threshold: 'expected 2.9.3',
      summary: 'firmware 2.10.0 is newer than the expected 2.9.3',
    });
  });

  it.each<[string, Condition]>([
    ['2.9.3', 'active'], // older than 2.10.0, though "2.9.3" > "2.10.0" as text
    ['2.10.0', 'inactive'],
    ['2.10.1', 'inactive'],
    ['10.0.0', 'inactive'],
    ['2.10.0-rc1', 'active'],
  ])('min_version 2.10.0 only: %s -> %s', (firmware, expected) => {
    const r = rule('firmware_drift', 'min_version: 2.10.0');
    expect(evaluateRule(r, box({ firmware }), { ...ctx, firmwareMajority: '1.0.0' }, false).condition).toBe(expected);
  });

  it('min_version fires even when the box is on the majority', () => {
    const r = rule('firmware_drift', 'expected: majority, min_version: 3.0.0');
    expect(evaluateRule(r, box({ firmware: '2.10.0' }), ctx, false)).toMatchObject({
      condition: 'active',
      summary: 'firmware 2.10.0 is older than the minimum 3.0.0',
      threshold: 'expected 2.10.0 (fleet majority), at least 3.0.0',
    });
  });
});

describe('missing', () => {
  const r = rule('missing');
  it('is active while the box is absent from the device list, inactive once back', () => {
    expect(evaluateRule(r, box({ missingSince: T0 - MIN }), ctx, false)).toMatchObject({
      condition: 'active',
      summary: `missing from the device list since ${new Date(T0 - MIN).toISOString()}`,
    });
    expect(evaluateRule(r, box({ missingSince: null }), ctx, true).condition).toBe('inactive');
    expect(evaluateRule(r, undefined, ctx, false).condition).toBe('unknown');
  });

  it('other rules know nothing about a missing box', () => {
    const missing = box({ missingSince: T0 - MIN, battery: 5, connected: false });
    for (const other of [rule('disconnected'), rule('low_battery'), rule('weak_signal'), rule('stale'), rule('firmware_drift')]) {
      expect(evaluateRule(other, missing, ctx, true).condition).toBe('unknown');
    }
  });
});

describe('boxes selectors', () => {
  const r = rule('disconnected', 'boxes: ["SN-00*", "LAB-?"]');
  it.each<[string, Condition]>([
    ['SN-0042', 'active'],
    ['SN-00', 'active'],
    ['SN-1042', 'inactive'],
    ['LAB-7', 'active'],
    ['LAB-77', 'inactive'],
    ['XSN-0042', 'inactive'],
  ])('%s -> %s', (serial, expected) => {
    expect(evaluateRule(r, box({ serial, connected: false }), ctx, false).condition).toBe(expected);
  });

  it('glob characters other than * and ? are literal', () => {
    const dots = rule('disconnected', 'boxes: "SN.1+(2)"');
    expect(evaluateRule(dots, box({ serial: 'SN.1+(2)', connected: false }), ctx, false).condition).toBe('active');
    expect(evaluateRule(dots, box({ serial: 'SNx1+(2)', connected: false }), ctx, false).condition).toBe('inactive');
  });
});

describe('fleetContext', () => {
  const b = (firmware: string, missingSince: number | null = null) => box({ firmware, missingSince });

  it('finds the most common firmware among present boxes', () => {
    const c = fleetContext([b('2.10.0'), b('2.10.0'), b('2.9.3'), b('2.9.3', T0), b('2.9.3', T0)], T0, T0 - 5);
    expect(c).toEqual({ now: T0, gatewayNow: T0 - 5, firmwareMajority: '2.10.0', calls: null });
  });

  it('breaks ties towards the newest version, whatever the order', () => {
    const boxes = [b('2.9.3'), b('2.10.0'), b('2.10.0'), b('2.9.3'), b('1.0.0')];
    expect(fleetContext(boxes, T0, null).firmwareMajority).toBe('2.10.0');
    expect(fleetContext([...boxes].reverse(), T0, null).firmwareMajority).toBe('2.10.0');
  });

  it('has no majority for an empty fleet', () => {
    expect(fleetContext([], T0, null).firmwareMajority).toBeNull();
    expect(fleetContext([b('2.9.3', T0)], T0, null).firmwareMajority).toBeNull();
  });
});

describe('judged without words (the alert pipeline drops most judgements unread)', () => {
  const kinds = [
    rule('disconnected'),
    rule('low_battery', 'below: 20, clear_above: 25'),
    rule('weak_signal', 'below_dbm: -100, clear_above_dbm: -90'),
    rule('stale', 'max_age: 5m'),
    rule('firmware_drift'),
    rule('firmware_drift', 'expected: "2.10.0", min_version: "2.9"'),
    rule('missing'),
  ];
  const boxes = [
    box(),
    box({ connected: false, battery: null }),
    box({ battery: 12, signal: -110 }),
    box({ battery: 22, signal: -95 }),
    box({ battery: null, signal: null }),
    box({ lastSeen: T0 - 20 * MIN }),
    box({ firmware: '2.9.3' }),
    box({ firmware: '2.8' }),
    box({ firmware: '' }),
    box({ missingSince: T0 - MIN }),
  ];

  it('gives the same condition as with words, for every kind, box and previous state', () => {
    for (const r of kinds) {
      for (const b of boxes) {
        for (const wasActive of [false, true]) {
          const full = evaluateRule(r, b, ctx, wasActive);
          const bare = evaluateRule(r, b, ctx, wasActive, false);
          expect(bare.condition, `${r.kind} ${JSON.stringify(b)} ${wasActive}`).toBe(full.condition);
        }
      }
    }
  });

  it('writes the words by default: a threshold and a summary', () => {
    expect(evaluateRule(rule('low_battery', 'below: 20, clear_above: 25'), box({ battery: 12 }), ctx, false)).toMatchObject({
      threshold: 'below 20% (clears above 25%)',
      summary: 'battery 12% (below 20%)',
    });
    expect(evaluateRule(rule('firmware_drift'), box({ firmware: '2.9.3' }), ctx, false)).toMatchObject({
      threshold: 'expected 2.10.0 (fleet majority)',
      summary: 'firmware 2.9.3 is older than the fleet majority 2.10.0',
    });
  });
});
