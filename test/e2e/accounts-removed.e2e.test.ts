/**
 * An account removed from `gateways:` (or renamed, which removes the old name), against the
 * daemon of test/e2e/accounts-rig.ts (two simulators over real HTTP, acme and globex, a real
 * SQLite file, a real Slack receiver): the daemon started again on the same database with only
 * acme (what a restart or a SIGHUP reload does: a new app from the new configuration) resolves
 * globex's firing alerts once, with the reason, and globex's boxes leave status, /api/boxes and
 * /metrics, with one log line; acme goes on as before.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { ACCOUNT_REMOVED } from '../../src/alerts/pipeline.js';
import { parseConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import { openStore } from '../../src/store/index.js';
import { ACME_KEY, startAccountsRig, type AccountsRig } from './accounts-rig.js';
import { slackTexts } from './harness.js';

const HOUR = 3_600_000;

let rig: AccountsRig | undefined;
let next: App | undefined;
afterEach(async () => {
  await next?.stop();
  next = undefined;
  await rig?.close();
  rig = undefined;
});

/** The daemon again on the rig's database, its `gateways:` only `accounts` (acme's simulator under each name), HTTP on, its log lines kept. */
async function restartWith(r: AccountsRig, accounts: string[], extra = ''): Promise<{ app: App; logs: Record<string, unknown>[] }> {
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const config = parseConfig(
    `
gateways:
${accounts.map((name) => `  - { name: ${name}, base_url: "${r.acme.url}", secret_key: "\${ACME_KEY}" }`).join('\n')}
poll: { schedule: "0 0 1 1 *" }
storage: { path: "${r.dbPath}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${r.slack.url}" }
http: { listen: "127.0.0.1:0" }
${extra}`,
    { ACME_KEY },
    'restarted',
  );
  await r.app.stop();
  const app = createApp({ config, logger: createLogger({ destination }), clock: r.clock, store: openStore(r.dbPath, { clock: r.clock }) });
  await app.start();
  return { app, logs };
}

function slackWith(r: AccountsRig, ...texts: string[]): string[] {
  return r.slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => texts.every((x) => t.includes(x)));
}

async function cycle(r: AccountsRig, app: App): Promise<void> {
  r.clock.advance(30_000);
  await app.runOnce();
  await app.deliverNow();
}

describe('an account removed from gateways:', () => {
  it('its firing alerts resolve once with the reason, its boxes leave the fleet, with one log line; the other account goes on', async () => {
    const r = (rig = await startAccountsRig());
    r.globex.sim.fleet.apply([r.globex.sim.fleet.boxes[0]!], { kind: 'disconnect' });
    r.acme.sim.fleet.apply([r.acme.sim.fleet.boxes[1]!], { kind: 'disconnect' });
    await r.cycle();
    expect(slackWith(r, 'globex/BX-00001', 'FIRING')).toHaveLength(1);
    const firing = [...(await r.app.alerts.states()).values()].filter((s) => s.status === 'firing').map((s) => s.serial).sort();
    expect(firing).toEqual(['acme/BX-00002', 'globex/BX-00001']);

    const globexCycles = (await r.app.store.lastCycles()).find((c) => c.account === 'globex');
    const globexLast = globexCycles?.startedAt as number;
    const before = await r.app.store.history('globex/BX-00002', 'battery', Math.floor(globexLast / HOUR) * HOUR, globexLast + 1, { kind: 'rollup' });
    const globexPolls = before.kind === 'rollup' ? before.points[0]?.count : undefined;
    expect(globexPolls).toBeGreaterThan(0);
    const { app, logs } = await restartWith(r, ['acme']);
    next = app;
    await cycle(r, app);
    // globex's alert resolved, told once, with why; acme's stays firing
    const states = await app.alerts.states();
    expect([...states.values()].map((s) => `${s.serial} ${s.status}`)).toEqual(['acme/BX-00002 firing', 'globex/BX-00001 resolved']);
    const resolved = slackWith(r, 'globex/BX-00001', 'RESOLVED');
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toContain(ACCOUNT_REMOVED);
    const transition = (await app.alerts.transitionsSince(0)).filter((t) => t.serial === 'globex/BX-00001').at(-1);
    expect(transition?.to).toBe('resolved');

    // globex's boxes no longer count: status's fleet, /api/boxes, /metrics
    expect((await app.store.boxes()).map((b) => b.serial).sort()).toEqual(['acme/BX-00001', 'acme/BX-00002', 'acme/BX-00003']);
    const api = (await (await fetch(`${app.httpUrl}/api/boxes`)).json()) as { boxes: { serial: string }[] };
    expect(api.boxes.map((b) => b.serial).sort()).toEqual(['acme/BX-00001', 'acme/BX-00002', 'acme/BX-00003']);
    const metrics = await (await fetch(`${app.httpUrl}/metrics`)).text();
    expect(metrics).toContain('account="acme"');
    expect(metrics).not.toContain('globex');

    // one log line, naming the account
    const lines = logs.filter((l) => String(l['msg']).startsWith('accounts no longer in the configuration'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ accounts: ['globex'], alerts: 1, boxes: 3 });

    // later cycles: nothing more about globex (no second resolve, no second log line)
    await cycle(r, app);
    await cycle(r, app);
    expect(slackWith(r, 'globex')).toHaveLength(2); // the firing and the one resolve
    expect(logs.filter((l) => String(l['msg']).startsWith('accounts no longer in the configuration'))).toHaveLength(1);
    expect([...(await app.alerts.states()).values()].map((s) => `${s.serial} ${s.status}`)).toEqual(['acme/BX-00002 firing']); // the resolved one came to rest

    // globex's open hour was closed when it was retired (its rollup written): once raw retention
    // has pruned that hour's sample rows, its history and uptime of the hour are still there.
    const hour = Math.floor(globexLast / HOUR) * HOUR;
    r.clock.advance(3 * HOUR);
    await cycle(r, app);
    await app.store.prune(r.clock.now(), { rawMs: 2 * HOUR, rollupMs: 30 * 24 * HOUR });
    expect((await app.store.history('globex/BX-00002', 'battery', hour, hour + HOUR, { kind: 'raw' })).points).toEqual([]);
    const rollup = await app.store.history('globex/BX-00002', 'battery', hour, hour + HOUR, { kind: 'rollup' });
    expect(rollup.kind === 'rollup' && rollup.points.map((p) => [p.t, p.count])).toEqual([[hour, globexPolls]]);
    expect((await app.store.uptime(hour, hour + HOUR)).find((u) => u.serial === 'globex/BX-00002')?.observedMs).toBeGreaterThan(0);
  }, 60_000);

  it('a renamed account: the old name is retired, the new name polls its boxes under their new ids', async () => {
    const r = (rig = await startAccountsRig());
    r.acme.sim.fleet.apply([r.acme.sim.fleet.boxes[0]!], { kind: 'disconnect' });
    await r.cycle();
    expect((await r.app.alerts.states()).get('box-offline\u0000acme/BX-00001')?.status).toBe('firing');

    // acme's gateway under the name "acme-eu"; globex dropped as well
    const { app } = await restartWith(r, ['acme-eu']);
    next = app;
    await cycle(r, app);
    const states = [...(await app.alerts.states()).values()].map((s) => `${s.serial} ${s.status}`);
    expect(states).toEqual(['acme/BX-00001 resolved', 'acme-eu/BX-00001 firing']);
    expect(slackWith(r, 'acme/BX-00001', 'RESOLVED')[0]).toContain(ACCOUNT_REMOVED);
    expect((await app.store.boxes()).map((b) => b.serial).sort()).toEqual(['acme-eu/BX-00001', 'acme-eu/BX-00002', 'acme-eu/BX-00003']);
  }, 60_000);

  it('with replicas, only the leader of the first configured account retires it, once', async () => {
    const r = (rig = await startAccountsRig());
    r.globex.sim.fleet.apply([r.globex.sim.fleet.boxes[0]!], { kind: 'disconnect' });
    await r.cycle();
    expect(slackWith(r, 'globex/BX-00001', 'FIRING')).toHaveLength(1);
    // Another replica leads acme, the only account left (its lease runs for a minute).
    const other = openStore(r.dbPath, { clock: r.clock });
    other.leases.heartbeat({ id: 'other', host: 'elsewhere', pid: 1 }, r.clock.now());
    const lease = other.leases.acquire('acme', 'other', r.clock.now(), 60_000);
    expect(lease?.holder).toBe('other');
    const { app, logs } = await restartWith(r, ['acme'], 'cluster: { lease: 3s, replica_id: here }\n');
    next = app;
    await cycle(r, app); // not this replica's account: no cycle, nothing retired
    expect((await app.alerts.states()).get('box-offline\u0000globex/BX-00001')?.status).toBe('firing');
    expect(slackWith(r, 'globex/BX-00001', 'RESOLVED')).toHaveLength(0);

    // The other replica lets acme go: this one takes it at its next round and retires globex.
    other.leases.release({ account: 'acme', holder: 'other', token: (lease as { token: number }).token });
    other.close();
    for (let i = 0; i < 2_000 && !(app.replica?.holds('acme') ?? false); i++) await r.clock.advanceAndSettle(1_000); // the coordinator's rounds run on the clock
    expect(app.replica?.holds('acme')).toBe(true);
    for (let c = 0; c < 2; c++) {
      // Time moves a second at a time, so that the lease is renewed as it would be.
      for (let i = 0; i < 30; i++) await r.clock.advanceAndSettle(1_000);
      await app.runOnce();
      await app.deliverNow();
    }
    expect((await app.alerts.states()).get('box-offline\u0000globex/BX-00001')?.status ?? 'inactive').toBe('inactive');
    expect(slackWith(r, 'globex/BX-00001', 'RESOLVED')).toHaveLength(1);
    expect(logs.filter((l) => String(l['msg']).startsWith('accounts no longer in the configuration'))).toHaveLength(1);
  }, 60_000);
});
