import { describe, expect, it } from 'vitest';
import { valueText } from '../../src/notify/format.js';
import { item } from './fixtures.js';

describe('values in messages carry their unit', () => {
  it.each([
    [{ ruleKind: 'low_battery', value: 12 }, '12%'],
    [{ ruleKind: 'weak_signal', value: -108 }, '-108 dBm'],
    [{ ruleKind: 'stale', value: 916 }, 'last seen 15m16s ago'],
    [{ ruleKind: 'firmware_drift', value: '3.3.0' }, '3.3.0'],
    [{ ruleKind: 'low_battery', value: null }, 'unknown'],
  ] as const)('%j -> %s', (over, text) => {
    expect(valueText(item({ ...over }))).toBe(text);
  });

  it('a resolved gateway alert does not repeat the failure it had', () => {
    expect(valueText(item({ serial: '', rule: 'gateway_unreachable', ruleKind: 'gateway_unreachable', status: 'resolved', value: 'unavailable' }))).toBeUndefined();
    expect(valueText(item({ serial: '', rule: 'gateway_unreachable', ruleKind: 'gateway_unreachable', status: 'firing', value: 'unavailable' }))).toBe('unavailable');
  });
});
