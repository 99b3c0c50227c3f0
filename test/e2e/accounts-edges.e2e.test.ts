/// <reference lib="dom" />
/**
 * Several accounts at the edges, against the daemon of test/e2e/accounts-rig.ts serving HTTP (two
 * simulators, acme and globex, with the same serials): the JSON API's `account` and `?account=`,
 * `/healthz` per account, the `account` label of `/metrics`, the CLI's ACCOUNT/SERIAL (an ambiguous
 * bare serial is exit 2 naming the candidates) and ACCOUNT column, and the dashboard's account
 * filter in a real headless Chromium. globex's key is refused from the start of the file's tests.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerAck } from '../../src/cli/ack.js';
import { registerAlerts } from '../../src/cli/alerts.js';
import { registerBox } from '../../src/cli/box.js';
import { registerHistory } from '../../src/cli/history.js';
import { registerStatus } from '../../src/cli/status.js';
import { hasChromium, launchBrowser } from '../helpers/browser.js';
import { runCommand as runWith } from '../helpers/cli.js';
import { startAccountsRig, type AccountsRig } from './accounts-rig.js';

const cli = (argv: string[]) => runWith(argv, {}, [registerStatus, registerHistory, registerBox]);

interface ApiBox {
  serial: string;
  account: string;
}

let rig: AccountsRig;
let url: string;
let globexFailedAt: number;
const get = async (path: string): Promise<{ status: number; body: unknown; text: string }> => {
  const res = await fetch(`${url}${path}`);
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // /metrics is text
  }
  return { status: res.status, body, text };
};

beforeAll(async () => {
  rig = await startAccountsRig({ http: true });
  url = rig.app.httpUrl as string;
  await rig.cycle();
  rig.globex.sim.rotateKey('globex-new-key'); // globex's cycles fail with unauthorized from now on
  globexFailedAt = rig.clock.now() + 30_000; // the next cycle's start
  rig.acme.sim.fleet.apply([rig.acme.sim.fleet.boxes[2]!], { kind: 'disconnect' });
  await rig.cycle();
});

afterAll(async () => {
  await rig?.close();
});

describe('the API', () => {
  it('carries each box account, and ?account= narrows /api/boxes to one account', async () => {
    const all = (await get('/api/boxes')).body as { boxes: ApiBox[] };
    expect(all.boxes.map((b) => `${b.account} ${b.serial}`).sort()).toEqual([
      'acme acme/BX-00001', 'acme acme/BX-00002', 'acme acme/BX-00003',
      'globex globex/BX-00001', 'globex globex/BX-00002', 'globex globex/BX-00003',
    ]);
    const acme = (await get('/api/boxes?account=acme')).body as { boxes: ApiBox[] };
    expect(acme.boxes.map((b) => b.serial).sort()).toEqual(['acme/BX-00001', 'acme/BX-00002', 'acme/BX-00003']);
    expect(((await get('/api/boxes?account=initech')).body as { boxes: ApiBox[] }).boxes).toEqual([]);
    const bad = await get('/api/boxes?account=No%20Such!');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('account: must be an account name');
  });

  it('answers one box by its ACCOUNT/SERIAL id (URL-encoded)', async () => {
    const box = await get(`/api/boxes/${encodeURIComponent('globex/BX-00002')}`);
    expect(box.status).toBe(200);
    expect(box.body).toMatchObject({ serial: 'globex/BX-00002', account: 'globex', name: rig.globex.sim.fleet.boxes[1]!.name });
  });

  it("/api/alerts: globex's outage holds back only globex's alerts, not acme's firing one", async () => {
    const { alerts } = (await get('/api/alerts')).body as { alerts: { id: string; state: string; heldBack: { reason: string } | null }[] };
    const acme = alerts.find((a) => a.id === 'box-offline/acme/BX-00003');
    expect(acme).toMatchObject({ state: 'firing', heldBack: null });
    expect(alerts.find((a) => a.id === 'gateway_unauthorized/globex/')).toMatchObject({ state: 'firing', heldBack: null });
  });

  it("/healthz lists each account's last cycle: globex failing, acme ok, the daemon healthy", async () => {
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    const accounts = (health.body as { accounts: { account: string; lastCycle: { outcome: string; errorCode: string | null } }[] }).accounts;
    expect(accounts.map((a) => [a.account, a.lastCycle.outcome, a.lastCycle.errorCode])).toEqual([
      ['acme', 'ok', null],
      ['globex', 'failed', 'unauthorized'],
    ]);
  });

  it('/healthz leaves out an account removed from the configuration, whose last cycle the database keeps', async () => {
    const db = new Database(rig.dbPath);
    db.prepare("INSERT INTO cycles (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account) VALUES (?, 100, 1, 'ok', NULL, NULL, 1, 0, 'initech')").run(rig.clock.now() - 60_000);
    db.close();
    const accounts = ((await get('/healthz')).body as { accounts: { account: string }[] }).accounts;
    expect(accounts.map((a) => a.account)).toEqual(['acme', 'globex']);
  });

  it('/metrics labels each box with its account, and has per-account cycle series', async () => {
    const { text } = await get('/metrics');
    const acme1 = rig.acme.sim.fleet.boxes[0]!;
    expect(text).toContain(`boxwatch_box_connected{serial="acme/BX-00001",name="${acme1.name}",account="acme"} 1`);
    expect(text).toContain(`boxwatch_box_connected{serial="acme/BX-00003",name="${rig.acme.sim.fleet.boxes[2]!.name}",account="acme"} 0`);
    expect(text).toMatch(/boxwatch_box_connected\{serial="globex\/BX-00001",name="[^"]*",account="globex"\} 1/);
    expect(text).toContain('boxwatch_account_gateway_failing{account="globex"} 1');
    expect(text).toContain('boxwatch_account_gateway_failing{account="acme"} 0');
    expect(text).toContain('boxwatch_account_poll_cycles_total{account="globex",outcome="failed"} 1');
    expect(text).toContain('boxwatch_account_poll_cycles_total{account="acme",outcome="ok"} 3');
  });
});

describe('the CLI', () => {
  it('a bare serial in several accounts is exit 2 with one line naming them; ACCOUNT/SERIAL reads the box', async () => {
    const ambiguous = await cli(['history', 'BX-00001', '--db', rig.dbPath]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.err.split('\n')[0]).toBe('error: serial BX-00001 is in several accounts: acme/BX-00001, globex/BX-00001 (write ACCOUNT/SERIAL)');
    const one = await cli(['history', 'acme/BX-00001', '--db', rig.dbPath, '--format', 'json']);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.out)).toMatchObject({ serial: 'acme/BX-00001', name: rig.acme.sim.fleet.boxes[0]!.name });
    const forget = await cli(['box', 'forget', 'BX-00002', '--db', rig.dbPath]);
    expect(forget.code).toBe(2);
    expect(forget.err).toContain('acme/BX-00002, globex/BX-00002');
  });

  it('status has an ACCOUNT column and says which account each gateway alert is of', async () => {
    const status = await cli(['status', '--db', rig.dbPath]);
    expect(status.code).toBe(0);
    const lines = status.out.split('\n');
    expect(lines[0]).toMatch(/^ACCOUNT\s+SERIAL\s+NAME\s+CONNECTED/);
    expect(lines.find((l) => l.startsWith('acme ') && l.includes('BX-00003'))).toMatch(/^acme\s+BX-00003\s.*\bno\b.*box-offline!/);
    expect(lines.filter((l) => /^globex\s+BX-0000\d\s/.test(l))).toHaveLength(3);
    expect(status.out).toContain('gateway alerts (globex): gateway_unauthorized! (the gateway rejects the account secret key');
    const json = JSON.parse((await cli(['status', '--db', rig.dbPath, '--format', 'json'])).out) as ApiBox[];
    expect(new Set(json.map((b) => b.account))).toEqual(new Set(['acme', 'globex']));
  });
});

describe.skipIf(!hasChromium)('the dashboard in Chromium', () => {
  it("the fleet page's account filter shows one account's boxes, in the URL, and the gateway alert names its account", async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${url}/`);
      await page.waitForSelector('body[data-updated]');
      const serials = () => page.locator('#boxes tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.serial).sort());
      expect(await serials()).toHaveLength(6);
      expect(await page.isVisible('#account-filter')).toBe(true);
      expect(await page.textContent('#summary')).toContain('gateway_unauthorized [globex] (firing)');
      const before = await page.getAttribute('body', 'data-updated');
      await page.selectOption('#filters select[name=account]', 'globex');
      await page.waitForFunction((b) => document.body.dataset.updated !== b, before);
      expect(await serials()).toEqual(['globex/BX-00001', 'globex/BX-00002', 'globex/BX-00003']);
      expect(new URL(page.url()).searchParams.get('account')).toBe('globex');
      expect(await page.textContent('#count-total')).toBe('3');
      // A reload keeps the filter; a box link opens the box page of that account's box.
      await page.reload();
      await page.waitForSelector('body[data-updated]');
      expect(await serials()).toEqual(['globex/BX-00001', 'globex/BX-00002', 'globex/BX-00003']);
      await page.click('#boxes tbody tr[data-serial="globex/BX-00001"] a');
      await page.waitForSelector('body[data-updated]');
      expect(decodeURIComponent(new URL(page.url()).pathname)).toBe('/boxes/globex/BX-00001');
      expect(await page.textContent('h1')).toContain('globex/BX-00001');
      expect(browser.problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("the overview lists the accounts with their boxes' counts (the filter's choices)", async () => {
    const body = (await get('/api/overview')).body as { facets: { accounts: { name: string; count: number }[] } };
    expect(body.facets.accounts).toEqual([{ name: 'acme', count: 3 }, { name: 'globex', count: 3 }]);
  });
});

describe("one account's outage is that account's only (acme polls, globex's key refused)", () => {
  interface GatewayBody {
    failingSince: string | null;
    lastErrorCode: string | null;
    failingAccounts: string[];
  }
  it("acme's firing alert is not held back as gateway_down in /api/alerts, and the CLI's alerts agree", async () => {
    const alerts = (await get('/api/alerts?active=true')).body as { alerts: { id: string; heldBack: unknown }[] };
    const offline = alerts.alerts.find((a) => a.id === 'box-offline/acme/BX-00003');
    expect(offline).toBeDefined();
    expect(offline?.heldBack).toBeNull();
    const cliAlerts = await runWith(['alerts', '--active', '--db', rig.dbPath, '--format', 'json'], {}, [registerAlerts]);
    expect(cliAlerts.code).toBe(0);
    const rows = (JSON.parse(cliAlerts.out) as { alerts: { id: string; heldBack: unknown }[] }).alerts;
    expect(rows.find((a) => a.id === 'box-offline/acme/BX-00003')?.heldBack).toBeNull();
  });

  it("/api/gateway and the header stay failing for globex through acme's ok cycles, since globex's first failure", async () => {
    const firstFailure = new Date(globexFailedAt).toISOString();
    const before = (await get('/api/gateway')).body as GatewayBody;
    expect(before).toMatchObject({ failingSince: firstFailure, lastErrorCode: 'unauthorized', failingAccounts: ['globex'] });
    await rig.cycle(); // acme ok, then globex failed again
    await rig.cycle();
    const after = (await get('/api/gateway')).body as GatewayBody;
    expect(after).toMatchObject({ failingSince: firstFailure, lastErrorCode: 'unauthorized', failingAccounts: ['globex'] });
    const page = (await get('/')).text;
    expect(page).toMatch(/Gateway failing \(globex\) since/);
  });
});

describe('boxwatch ack names the alert as boxwatch alerts shows it (runs last: it acknowledges)', () => {
  it('RULE BOX with a bare serial one account has, and a gateway alert by its account; an unknown one is exit 2', async () => {
    const config = join(rig.dbPath, '..', 'ack.yaml');
    writeFileSync(config, `gateway: { secret_key: "\${UNSET_KEY}" }\nstorage: { path: "${rig.dbPath}" }\n`);
    const ack = (argv: string[]) => runWith(['ack', ...argv, '--comment', 'on it', '--by', 'alice', '--config', config], {}, [registerAck]);
    const box = await ack(['box-offline', 'BX-00003']);
    expect(box).toMatchObject({ code: 0, err: '' });
    expect(box.out).toMatch(/^acknowledged box-offline\/acme\/BX-00003 by alice: /);
    const gateway = await ack(['gateway_unauthorized', 'globex']);
    expect(gateway).toMatchObject({ code: 0, err: '' });
    expect(gateway.out).toMatch(/^acknowledged gateway_unauthorized\/globex\/ by alice: /);
    const acked = (await get('/api/alerts?active=true')).body as { alerts: { id: string; ack: { by: string } | null }[] };
    expect(acked.alerts.filter((a) => a.ack !== null).map((a) => `${a.id} ${a.ack?.by}`).sort()).toEqual(['box-offline/acme/BX-00003 alice', 'gateway_unauthorized/globex/ alice']);
    const unknown = await ack(['box-offline', 'BX-00001']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/^error: no alert "box-offline BX-00001" \(firing: /);
  });
});
