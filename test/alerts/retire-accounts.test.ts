/**
 * Which accounts no longer in this process's `gateways:` a cycle retires (src/alerts/pipeline.ts,
 * `accountsToRetire`, and the pipeline's `decide` that uses it): with replicas the lists differ
 * during a rolling reload, so an account whose lease another replica runs, or ran less than a
 * lease time ago, is left alone; one nobody has worked for a lease time is retired.
 */
import { describe, expect, it } from 'vitest';
import { ACCOUNT_REMOVED, accountsToRetire, AlertPipeline } from '../../src/alerts/pipeline.js';
import type { CycleView } from '../../src/alerts/repositories.js';
import type { Lease } from '../../src/domain/leases.js';
import { parseConfig } from '../../src/config/index.js';
import { firing as firingAt } from '../helpers/filled-store.js';

const NOW = Date.parse('2026-05-01T09:00:00Z');
const LEASE = 3_000;
const lease = (account: string, holder: string | null, expiresAt: number): Lease => ({ account, holder, token: 4, expiresAt });

describe('accounts a cycle retires', () => {
  const retire = (leases: Lease[]): string[] => [...accountsToRetire(['acme', 'globex'], ['acme', 'globex', 'initech'], leases, NOW, LEASE)];

  it('an account not configured here and never leased is retired; configured ones never are', () => {
    expect(retire([])).toEqual(['initech']);
    expect(retire([lease('acme', null, 0), lease('globex', null, 0)])).toEqual(['initech']);
  });

  it('not while another replica leads it (a rolling reload: its gateways: has the account)', () => {
    expect(retire([lease('initech', 'replica-b', NOW + 2_000)])).toEqual([]);
  });

  it('not while its lease expired or was released less than a lease time ago (its holder may renew, or another replica take it)', () => {
    expect(retire([lease('initech', 'replica-b', NOW - LEASE + 1)])).toEqual([]);
    expect(retire([lease('initech', null, NOW - 1_000)])).toEqual([]);
  });

  it('once nobody has worked it for a lease time', () => {
    expect(retire([lease('initech', 'replica-b', NOW - LEASE)])).toEqual(['initech']);
    expect(retire([lease('initech', null, NOW - 10 * LEASE)])).toEqual(['initech']);
  });
});

describe("the first account's cycle, with an account another replica leads", () => {
  const config = parseConfig(
    `
gateways:
  - { name: acme, base_url: "http://127.0.0.1:1", secret_key: k }
  - { name: globex, base_url: "http://127.0.0.1:1", secret_key: k }
storage: { path: ":memory:" }
cluster: { lease: 3s }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
`,
    {},
    'test',
  );
  const firing = firingAt('initech/BX-00001', NOW - 60_000);
  const view = (leases: Lease[]): CycleView => ({ boxes: [], states: new Map([[firing.key, firing]]), silences: [], leases });
  const decide = (leases: Lease[]) =>
    new AlertPipeline({ config }).decide({ outcome: 'ok', errorCode: null, rejected: [], gatewayClockSkewMs: null, account: 'acme' }, view(leases), NOW, null);

  it('leaves its firing alert alone while its lease runs, and resolves it (notified) once nobody has worked it for a lease time', () => {
    const led = decide([lease('initech', 'replica-b', NOW + 2_000)]);
    expect(led.alerts.transitions).toEqual([]);
    expect(led.alerts.queued).toEqual([]);
    expect(led.result.removedAccounts).toBeNull();

    const abandoned = decide([lease('initech', null, NOW - LEASE)]);
    expect(abandoned.alerts.transitions.map((t) => `${t.serial} ${t.from} -> ${t.to}`)).toEqual(['initech/BX-00001 firing -> resolved']);
    expect(abandoned.alerts.transitions[0]?.summary).toBe(ACCOUNT_REMOVED);
    expect(abandoned.result.removedAccounts?.accounts).toEqual(['initech']);
  });
});
