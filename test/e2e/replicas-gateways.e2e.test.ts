/**
 * Replicas whose `gateways:` differ, as during a rolling reload (one replica already has the new
 * account, the other not yet), with real processes on one SQLite file (3 s leases, a cycle every
 * second; test/helpers/replica-config.ts): replica-a polls acme only (the old list), replica-b
 * acme and initech (the new one), and leads initech, whose boxes are all disconnected.
 *
 * replica-a leads acme, its first account, whose cycle retires accounts missing from its list
 * (src/alerts/pipeline.ts). It must leave initech alone while replica-b works it: its alerts fire
 * once and stay firing, with no "account removed" RESOLVED, through many of replica-a's cycles
 * (before the fix they flapped FIRING/RESOLVED every cycle). Once replica-b stops and nobody has
 * worked initech for a lease time, replica-a retires it: one RESOLVED per alert, with the reason.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_REMOVED } from '../../src/alerts/pipeline.js';
import { sqliteRows, startReplicaRig, webhookAlertCounts, type ReplicaRig } from '../helpers/replica-config.js';
import { ensureBuilt } from './build.js';

const ACCOUNTS = ['acme', 'initech'];

describe('replicas whose gateways: differ (a rolling reload)', () => {
  let rig: ReplicaRig;
  let dbPath: string;

  beforeAll(async () => {
    await ensureBuilt();
    rig = await startReplicaRig({ accounts: ACCOUNTS, devices: 2, seed: 41, prefix: 'boxwatch-gateways-', disconnected: ['initech'] });
    dbPath = join(rig.dir, 'boxwatch.db');
  }, 120_000);

  afterAll(async () => {
    await rig?.close();
  });

  const rows = <T>(sql: string): T[] => sqliteRows<T>(dbPath, sql);
  const holder = (account: string): string | null | undefined => rows<{ holder: string | null }>(`SELECT holder FROM leases WHERE account = '${account}'`)[0]?.holder;
  const acmeCycles = (): number => Number(rows<{ n: number }>("SELECT count(*) AS n FROM cycles WHERE account = 'acme'")[0]?.n ?? 0);
  const initechTransitions = (): { serial: string; to: string; summary: string | null }[] =>
    rows("SELECT serial, to_status AS \"to\", summary FROM alert_transitions WHERE serial LIKE 'initech/%' ORDER BY id");

  it("the replica without the account leaves it alone while the other works it: no flapping; it retires it once nobody has worked it for a lease time", async () => {
    const { daemons, hook } = rig;
    const config = (name: string, accounts: string[]): Promise<string> => rig.config(name, `{ path: "${dbPath}" }`, accounts);
    // replica-a first, so that it leads acme; then replica-b takes initech, which only it knows.
    const a = daemons.spawn(await config('replica-a', ['acme']));
    await daemons.until('replica-a leads acme', () => holder('acme') === 'replica-a', 60_000);
    const b = daemons.spawn(await config('replica-b', ['acme', 'initech']));
    await daemons.until('replica-b leads initech', () => holder('initech') === 'replica-b', 60_000);
    await daemons.until('initech’s boxes firing, delivered', () => (webhookAlertCounts(hook.requests).get('initech/BX-00001 firing') ?? 0) >= 1 && (webhookAlertCounts(hook.requests).get('initech/BX-00002 firing') ?? 0) >= 1, 60_000);

    // Eight more cycles of acme by replica-a (each one retired initech before the fix).
    const cycles = acmeCycles();
    await daemons.until('eight more cycles of acme', () => acmeCycles() >= cycles + 8, 60_000);
    expect(holder('acme')).toBe('replica-a');
    expect(holder('initech')).toBe('replica-b');
    expect(initechTransitions().map((t) => `${t.serial} ${t.to}`).sort()).toEqual(['initech/BX-00001 firing', 'initech/BX-00002 firing']);
    const delivered = webhookAlertCounts(hook.requests);
    expect([...delivered].filter(([key]) => key.startsWith('initech/'))).toEqual(
      expect.arrayContaining([
        ['initech/BX-00001 firing', 1],
        ['initech/BX-00002 firing', 1],
      ]),
    );
    expect([...delivered.keys()].filter((key) => key.startsWith('initech/') && key.endsWith('resolved'))).toEqual([]);

    // replica-b stops (its new list rolled back, say): nobody works initech any more; replica-a retires it once.
    b.kill('SIGTERM');
    expect(await daemons.exited(b)).toEqual({ code: 0, signal: null });
    await daemons.until('initech retired', () => initechTransitions().filter((t) => t.to === 'resolved').length === 2, 60_000);
    const resolved = initechTransitions().filter((t) => t.to === 'resolved');
    for (const t of resolved) expect(t.summary).toBe(ACCOUNT_REMOVED);
    await daemons.until('the RESOLVED delivered', () => (webhookAlertCounts(hook.requests).get('initech/BX-00001 resolved') ?? 0) === 1 && (webhookAlertCounts(hook.requests).get('initech/BX-00002 resolved') ?? 0) === 1, 60_000);
    a.kill('SIGTERM');
    expect(await daemons.exited(a)).toEqual({ code: 0, signal: null });
  }, 240_000);
});
