import { describe, expect, it } from 'vitest';
import { ruleRef } from '../../src/alerts/engine.js';
import { gatewayEvaluations } from '../../src/alerts/gateway.js';
import { fanOut } from '../../src/alerts/group.js';
import type { NotificationIntent } from '../../src/alerts/types.js';
import { parseConfig } from '../../src/config/index.js';
import { T0 } from './harness.js';

const YAML = `
gateway: { secret_key: test-key }
rules:
  - { name: box-offline, kind: disconnected, for: 2m, severity: critical }
  - { name: battery-low, kind: low_battery, below: 20, clear_above: 25, severity: warning, keep_firing_for: 5m }
alerting:
  repeat_interval: 4h
  group_wait: 30s
  inhibit: true
  gateway: { unreachable_after: 2 }
notifiers:
  - { name: ops-mail, type: email, smtp_url: "smtp://127.0.0.1:2525", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "http://127.0.0.1:9/hook", min_severity: warning }
  - { name: site-b, type: console, boxes: "SN-2*", rules: [box-offline] }
`;

const intent = (rule: string, serial: string, severity: NotificationIntent['severity']): NotificationIntent => ({
  key: `${rule}\u0000${serial}`,
  rule,
  kind: 'k',
  serial,
  severity,
  type: 'firing',
  createdAt: T0,
  firingSince: T0,
  resolvedAt: null,
  value: null,
  threshold: null,
  summary: null,
});

describe('the alert engine takes the validated configuration as it is', () => {
  const config = parseConfig(YAML, {});

  it('rules become rule references with their timing in ms', () => {
    expect(config.rules.map(ruleRef)).toEqual([
      { name: 'box-offline', kind: 'disconnected', severity: 'critical', forMs: 120_000, keepFiringForMs: 0 },
      { name: 'battery-low', kind: 'low_battery', severity: 'warning', forMs: 0, keepFiringForMs: 300_000 },
    ]);
  });

  it('alerting.gateway configures the built-in gateway alerts', () => {
    const [unreachable] = gatewayEvaluations({ outcome: 'failed', errorCode: 'unavailable' }, config.alerting.gateway);
    expect(unreachable?.rule).toMatchObject({ name: 'gateway_unreachable', severity: 'critical', forCycles: 2 });
  });

  it('notifier selectors route by severity, rule and box (gateway alerts pass box selectors)', () => {
    const routed = fanOut(
      [intent('battery-low', 'SN-100', 'info'), intent('box-offline', 'SN-200', 'critical'), intent('gateway_unreachable', '', 'critical')],
      config.notifiers,
    ).map((r) => `${r.notifier}: ${r.intent.rule} ${r.intent.serial}`.trim());
    expect(routed).toEqual([
      'ops-mail: battery-low SN-100',
      'ops-mail: box-offline SN-200',
      'ops-mail: gateway_unreachable',
      'ops-slack: box-offline SN-200',
      'ops-slack: gateway_unreachable',
      'site-b: box-offline SN-200',
    ]);
  });
});
