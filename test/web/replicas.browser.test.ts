/// <reference lib="dom" />
/**
 * Who serves each account, as an operator sees it, with real processes: three `boxwatch run`
 * replicas (`cluster:`, 3 s leases) of two simulated accounts on one SQLite file, so replica-a and
 * replica-b lead one account each and replica-c stands by; the Fleet page of the standby in a real
 * headless Chromium, and the built `boxwatch status` (table and JSON).
 * The database also holds the expired lease of a third account, left by a replica that died long
 * ago and announced a hostile host name: the page says nobody serves that account and shows the
 * name as text. The standby's page stays live on the others' cycles (a box going offline shows
 * without a reload). Then replica-b is killed (SIGKILL): the open page shows its account served by
 * replica-c, which took it over.
 */
import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountServerJson } from '../../src/cluster/servers.js';
import { ensureBuilt } from '../e2e/build.js';
import { hasChromium, launchBrowser, type Browser } from '../helpers/browser.js';
import { runBuilt } from '../helpers/cli-process.js';
import { sqliteRows, startReplicaRig, type ReplicaRig } from '../helpers/replica-config.js';

const ACCOUNTS = ['acme', 'globex'];
const HOSTILE = '<img src=x onerror=alert(1)>';
const NAMES = ['replica-a', 'replica-b', 'replica-c'];


describe.skipIf(!hasChromium)('the replica serving each account, on the dashboard and in boxwatch status', () => {
  let rig: ReplicaRig;
  let browser: Browser;
  let dbPath: string;

  beforeAll(async () => {
    await ensureBuilt();
    rig = await startReplicaRig({ accounts: ACCOUNTS, devices: 2, seed: 41, prefix: 'boxwatch-replicas-page-' });
    dbPath = join(rig.dir, 'boxwatch.db');
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  /** Each account's lease holder in the database. */
  const holders = (): Map<string, string | null> =>
    new Map(sqliteRows<{ account: string; holder: string | null }>(dbPath, 'SELECT account, holder FROM leases').map((r) => [r.account, r.holder]));
  const servedBy = (page: Page, account: string) => page.locator(`#servers tbody tr[data-account="${account}"] td:nth-child(2)`);

  it('the standby’s Fleet page names the replica serving each account, nobody for an expired lease, stays live, and follows a takeover', async () => {
    const { daemons, sims, ports } = rig;
    const children = new Map<string, ChildProcess>();
    for (const n of NAMES.slice(0, 2)) children.set(n, daemons.spawn(await rig.config(n, `{ path: "${dbPath}" }`)));
    await daemons.until('replica-a and replica-b lead one account each', () => {
      const h = holders();
      return ACCOUNTS.map((a) => h.get(a)).sort().join() === 'replica-a,replica-b';
    }, 90_000);
    // replica-c starts last: the two accounts over three replicas are balanced (1, 1, 0), so it leads none (src/cluster/coordinator.ts).
    children.set('replica-c', daemons.spawn(await rig.config('replica-c', `{ path: "${dbPath}" }`)));

    const base = `http://127.0.0.1:${ports.get('replica-c')}`;
    await daemons.until('replica-c answers', () => fetch(`${base}/api/cluster`).then((r) => r.ok, () => false), 60_000); // it may not listen yet
    // A replica that died a minute ago: its heartbeat and its lease of `initech` are old.
    const db = new Database(dbPath);
    db.pragma('busy_timeout = 10000');
    const longAgo = Date.now() - 60_000;
    db.prepare('INSERT INTO replicas (id, host, pid, started_at, beat_at) VALUES (?, ?, ?, ?, ?)').run('ghost-1', HOSTILE, 4242, longAgo - 60_000, longAgo);
    db.prepare('INSERT INTO leases (account, holder, token, expires_at, acquired_at) VALUES (?, ?, 7, ?, ?)').run('initech', 'ghost-1', longAgo, longAgo - 3_000);
    db.close();
    const cluster = (await (await fetch(`${base}/api/cluster`)).json()) as { replica: { id: string; leads: string[] }; accounts: AccountServerJson[] };
    const h = holders();
    expect(cluster.replica).toEqual({ id: 'replica-c', leads: [] });
    expect(cluster.accounts.map((s) => [s.account, s.state, s.replica])).toEqual([
      ['acme', 'serving', h.get('acme')],
      ['globex', 'serving', h.get('globex')],
      ['initech', 'expired', 'ghost-1'],
    ]);
    for (const s of cluster.accounts.slice(0, 2)) {
      expect(s.pid).toBe(children.get(s.replica!)!.pid);
      expect(Date.parse(s.leaseExpiresAt!)).toBeGreaterThan(Date.parse(s.heartbeatAt!));
    }
    expect((await fetch(`${base}/api/cluster?x=1`)).status).toBe(400);

    const page = await browser.page();
    await page.goto(`${base}/`);
    await page.waitForSelector('#replicas:not([hidden]) #servers tbody tr');
    expect(await page.textContent('#replicas-self')).toBe('This page is served by replica replica-c, which leads no account.');
    for (const a of ACCOUNTS) expect(await servedBy(page, a).textContent()).toBe(h.get(a));
    expect(await servedBy(page, 'initech').textContent()).toMatch(/^✕ nobody \(lease expired 1m ago\)$/);
    // The hostile host name is text: no element made of it, no script run.
    expect(await page.textContent('#servers tbody tr[data-account="initech"] td:nth-child(3)')).toBe(`${HOSTILE} (pid 4242)`);
    expect(await page.locator('#replicas img').count()).toBe(0);

    // The standby's page follows the others' cycles: a box of acme goes offline, and the page shows it without a reload.
    const box = sims.get('acme')!.sim.fleet.boxes[0]!;
    sims.get('acme')!.sim.fleet.apply([box], { kind: 'disconnect' });
    await page.waitForSelector(`#boxes tbody tr[data-serial="acme/${box.serial}"][data-state="offline"]`, { timeout: 60_000 });

    // replica-b dies: the standby takes its account over (one each for replica-a and replica-c), and its open page says so.
    const victimAccount = ACCOUNTS.find((a) => h.get(a) === 'replica-b')!;
    children.get('replica-b')!.kill('SIGKILL');
    await page.waitForFunction((a) => document.querySelector(`#servers tbody tr[data-account="${a}"] td:nth-child(2)`)?.textContent === 'replica-c', victimAccount, { timeout: 60_000 });
    expect(await page.textContent('#replicas-self')).toBe(`This page is served by replica replica-c, which leads ${victimAccount}.`);
    expect(browser.problems).toEqual([]);

    // `boxwatch status`: the table names the replica of each account; the JSON gives each box its account's server.
    const table = await runBuilt(['status', '--db', dbPath]);
    expect(table.code, table.err).toBe(0);
    const last = holders();
    for (const a of ACCOUNTS) expect(table.out).toMatch(new RegExp(`^ {2}${a}: ${last.get(a)} \\(host \\S+, pid ${children.get(last.get(a)!)!.pid}, heartbeat [^)]+\\)$`, 'm'));
    expect(table.out).toMatch(/^ {2}initech: nobody \(lease expired 1m ago\)$/m);
    const json = await runBuilt(['status', '--db', dbPath, '--format', 'json']);
    expect(json.code, json.err).toBe(0);
    const boxes = JSON.parse(json.out) as { serial: string; account: string; servedBy: AccountServerJson | null }[];
    expect(boxes.map((b) => b.account).sort()).toEqual(['acme', 'acme', 'globex', 'globex']);
    for (const b of boxes) {
      expect(b.servedBy).toMatchObject({ account: b.account, state: 'serving', replica: last.get(b.account), pid: children.get(last.get(b.account)!)!.pid });
      expect(b.servedBy!.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
    }
  }, 240_000);
});
