import { describe, expect, it } from 'vitest';
import type { Silence } from '../../src/alerts/silences.js';
import { expireSilence, isSilenced, matchingSilences, silenceState, validateSilence } from '../../src/alerts/silences.js';
import { alertKey } from '../../src/alerts/types.js';
import { HOUR, T0 } from './harness.js';

const s = (matchers: Silence['matchers'], over: Partial<Silence> = {}): Silence => ({
  id: 'a',
  matchers,
  startsAt: T0,
  endsAt: T0 + 2 * HOUR,
  comment: 'site visit',
  ...over,
});

describe('box globs in silences', () => {
  it.each([
    ['SN-00*', 'SN-0042', true],
    ['SN-00*', 'SN-00', true],
    ['SN-00*', 'SN-1042', false],
    ['SN-004?', 'SN-0042', true],
    ['SN-004?', 'SN-00421', false],
    ['*', 'anything', true],
    ['SN-0042', 'SN-0042', true],
    ['SN-0042', 'sn-0042', false],
    ['SN.0042', 'SN-0042', false],
    ['SN-(1)+', 'SN-(1)+', true],
    ['[ab]', 'a', true],
    ['[ab]', '[ab]', false],
    ['SN-004[!2]', 'SN-0042', false],
  ])('%s matches %s: %s', (glob, text, result) => {
    expect(isSilenced({ rule: 'battery-low', serial: text }, [s({ boxes: [glob] })], T0)).toBe(result);
  });
});

describe('silences', () => {
  it('is pending before startsAt, active from startsAt, expired from endsAt', () => {
    const sil = s({ boxes: ['*'] });
    expect([T0 - 1, T0, T0 + 2 * HOUR - 1, T0 + 2 * HOUR].map((t) => silenceState(sil, t))).toEqual(['pending', 'active', 'active', 'expired']);
    expect([T0 - 1, T0, T0 + 2 * HOUR - 1, T0 + 2 * HOUR].map((t) => isSilenced({ rule: 'r', serial: 'SN-1' }, [sil], t))).toEqual([false, true, true, false]);
  });

  it.each([
    { name: 'box glob, any rule', m: { boxes: ['SN-00*'] }, alert: ['battery-low', 'SN-0042'], hit: true },
    { name: 'box glob, other box', m: { boxes: ['SN-00*'] }, alert: ['battery-low', 'SN-1042'], hit: false },
    { name: 'one of several box globs', m: { boxes: ['SN-1*', 'SN-0042'] }, alert: ['battery-low', 'SN-0042'], hit: true },
    { name: 'rule, any box', m: { rules: ['battery-low'] }, alert: ['battery-low', 'SN-9'], hit: true },
    { name: 'rule, other rule', m: { rules: ['battery-low'] }, alert: ['box-offline', 'SN-9'], hit: false },
    { name: 'box and rule: both must match', m: { boxes: ['SN-9'], rules: ['battery-low'] }, alert: ['box-offline', 'SN-9'], hit: false },
    { name: 'box and rule: both match', m: { boxes: ['SN-9'], rules: ['battery-low'] }, alert: ['battery-low', 'SN-9'], hit: true },
    { name: 'box matchers never match a fleet-level alert', m: { boxes: ['*'] }, alert: ['gateway_unreachable', ''], hit: false },
    { name: 'rule matcher matches a fleet-level alert', m: { rules: ['gateway_unreachable'] }, alert: ['gateway_unreachable', ''], hit: true },
    { name: 'no matchers match nothing', m: {}, alert: ['battery-low', 'SN-9'], hit: false },
  ])('$name', ({ m, alert, hit }) => {
    const [rule, serial] = alert as [string, string];
    expect(isSilenced({ rule, serial }, [s(m)], T0)).toBe(hit);
    expect(isSilenced(alertKey(rule, serial), [s(m)], T0)).toBe(hit);
  });

  it('lists the ids of the active silences that match, in order', () => {
    const list = [s({ boxes: ['SN-*'] }, { id: 'x' }), s({ rules: ['r'] }, { id: 'y' }), s({ rules: ['r'] }, { id: 'z', startsAt: T0 + HOUR })];
    expect(matchingSilences({ rule: 'r', serial: 'SN-1' }, list, T0)).toEqual(['x', 'y']);
    expect(matchingSilences({ rule: 'r', serial: 'SN-1' }, list, T0 + HOUR)).toEqual(['x', 'y', 'z']);
  });

  it('validates', () => {
    expect(validateSilence(s({ boxes: ['SN-1'] }))).toEqual([]);
    expect(validateSilence(s({}, { comment: ' ', endsAt: T0 }))).toEqual([
      'a silence needs at least one box glob or rule name',
      'a silence must end after it starts',
      'a silence needs a comment',
    ]);
    expect(validateSilence(s({ boxes: [''] }))).toEqual(['matchers must not be empty']);
  });

  it('expiring ends an active silence now, cancels a pending one, leaves an expired one', () => {
    const active = s({ boxes: ['*'] });
    expect(expireSilence(active, T0 + HOUR)).toMatchObject({ startsAt: T0, endsAt: T0 + HOUR });
    expect(silenceState(expireSilence(active, T0 + HOUR), T0 + HOUR)).toBe('expired');
    const pending = s({ boxes: ['*'] }, { startsAt: T0 + HOUR });
    expect(silenceState(expireSilence(pending, T0), T0)).toBe('expired');
    expect(isSilenced({ rule: 'r', serial: 'b' }, [expireSilence(pending, T0)], T0 + HOUR)).toBe(false);
    const over = s({ boxes: ['*'] });
    expect(expireSilence(over, T0 + 3 * HOUR)).toBe(over);
  });
});
