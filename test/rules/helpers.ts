/** Builders for rule tests: real rule configurations (parsed, with defaults) and box states. */
import { parseConfig, type RuleConfig, type RuleKind, type RuleOfKind } from '../../src/config/index.js';
import type { BoxState } from '../../src/domain/store.js';

export const T0 = Date.parse('2025-03-01T12:00:00Z');

/** A rule as the configuration file would give it, e.g. rule('low_battery', 'below: 20'). */
export function rule<K extends RuleKind>(kind: K, fields = ''): RuleOfKind<K> {
  const text = `gateway: { secret_key: k }\nrules:\n  - { name: r, kind: ${kind}, severity: warning${fields ? `, ${fields}` : ''} }\n`;
  return parseConfig(text, {}).rules[0] as RuleOfKind<K>;
}

export function box(overrides: Partial<BoxState> = {}): BoxState {
  return {
    serial: 'SN-0001',
    account: 'default',
    id: 1,
    name: 'Lobby',
    connected: true,
    battery: 80,
    signal: -70,
    firmware: '2.10.0',
    lastSeen: T0 - 10_000,
    registeredAt: T0 - 86_400_000,
    location: 'Hall',
    ip: '10.0.0.1',
    detailsAt: T0 - 60_000,
    firstSeen: T0 - 86_400_000,
    lastPolled: T0,
    missingSince: null,
    ...overrides,
  };
}

export type { RuleConfig };
