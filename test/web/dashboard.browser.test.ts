/// <reference lib="dom" />
/**
 * The dashboard in a real headless Chromium against a daemon (createApp, real SQLite) polling the
 * simulator over real HTTP, with a local Slack receiver. One browser and one daemon for the file;
 * the tests run in order on them. Time is the rig's FakeClock: a cycle runs only when a test says.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { slackTexts, startRig, type Rig } from '../e2e/harness.js';
import { hasChromium, launchBrowser, type Browser } from '../helpers/browser.js';

const TOKEN = 'test-admin-token-0123456789';
const XSS = '<img src=x onerror=alert(1)>';
const MIN = 60_000;

interface ApiBox {
  serial: string;
  connected: boolean;
  lastSeen: string;
  missingSince: string | null;
}

describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  let rig: Rig;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    rig = await startRig({
      devices: 12,
      http: { adminToken: TOKEN },
      scenario: `
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 1m, box: BX-00001, battery: 70 }
  - { at: 2m, box: BX-00001, battery: 55 }
  - { at: 3m, box: BX-00001, battery: 40 }
  - { at: 30m, box: BX-00004, disconnect: true }
  - { from: 40m, to: 42m, status: 503 }
`,
    });
    const named = rig.sim.sim.fleet.boxes.find((b) => b.serial === 'BX-00002');
    if (named) named.name = XSS;
    for (let i = 0; i < 8; i++) await rig.cycle(30_000); // 4 minutes of history
    url = rig.app.httpUrl as string;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  const api = async <T>(path: string): Promise<T> => (await fetch(`${url}${path}`)).json() as Promise<T>;
  const rows = (page: Page) => page.locator('#boxes tbody tr');
  /** Waits for the page's next update (data-updated changes) after `action`. */
  const updated = async (page: Page, action: () => Promise<unknown>): Promise<void> => {
    const before = await page.getAttribute('body', 'data-updated');
    await action();
    await page.waitForFunction((b) => document.body.dataset.updated !== undefined && document.body.dataset.updated !== b, before);
  };

  it('lists every box on the overview with counts that match /api/boxes; a filter narrows the list and survives a reload', async () => {
    const page = await browser.page();
    await page.goto(`${url}/`);
    await page.waitForSelector('body[data-updated]');
    const { boxes } = await api<{ boxes: ApiBox[] }>('/api/boxes');
    const now = rig.clock.now();
    const state = (b: ApiBox): string =>
      b.missingSince !== null ? 'missing' : !b.connected ? 'offline' : now - Date.parse(b.lastSeen) > 15 * MIN ? 'stale' : 'online';
    expect(await rows(page).count()).toBe(boxes.length);
    expect((await rows(page).evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.serial))).sort()).toEqual(boxes.map((b) => b.serial).sort());
    expect(await page.textContent('#count-total')).toBe(String(boxes.length));
    expect(await page.isVisible('#account-filter')).toBe(false); // one account: no account filter
    expect(await page.isVisible('#replicas')).toBe(false); // one daemon, nothing leased: no Replicas table
    for (const s of ['online', 'offline', 'stale', 'missing']) {
      expect(await page.textContent(`.count-${s} .n`), s).toBe(String(boxes.filter((b) => state(b) === s).length));
    }

    await updated(page, () => page.fill('#filters input[name=q]', 'BX-0001'));
    expect((await rows(page).evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.serial))).sort()).toEqual(['BX-00010', 'BX-00011', 'BX-00012']);
    expect(new URL(page.url()).searchParams.get('q')).toBe('BX-0001');
    await page.reload();
    await page.waitForSelector('body[data-updated]');
    expect(await page.inputValue('#filters input[name=q]')).toBe('BX-0001');
    expect(await rows(page).count()).toBe(3);
    await page.close();
  });

  it('draws the box charts from the stored history: the points equal the API answer for the range', async () => {
    const page = await browser.page();
    await page.goto(`${url}/boxes/BX-00001?since=1h`);
    await page.waitForSelector('body[data-updated]');
    for (const metric of ['battery', 'signal', 'connected']) {
      const h = await api<{ kind: string; points: { t: string; value: number | null }[] }>(`/api/boxes/BX-00001/history?metric=${metric}&since=1h`);
      expect(h.kind).toBe('raw');
      const table = await page.locator(`table.chart-data[data-metric=${metric}] tbody tr`).evaluateAll((trs) =>
        trs.map((tr) => ({ t: tr.querySelector('time')?.getAttribute('datetime'), value: tr.querySelectorAll('td')[1]?.textContent })),
      );
      const unit = (v: number | null): string => (v === null ? '–' : metric === 'battery' ? `${v}%` : metric === 'signal' ? `${v} dBm` : v === 1 ? 'yes' : 'no');
      expect(table, metric).toEqual(h.points.map((p) => ({ t: p.t, value: unit(p.value) })));
      expect(await page.locator(`#chart-${metric} canvas`).count(), metric).toBe(1);
    }
    // The scripted battery steps are there: 70, 55, 40.
    const battery = await page.locator('table.chart-data[data-metric=battery] tbody td:nth-child(2)').allTextContents();
    expect(battery).toEqual(expect.arrayContaining(['70%', '55%', '40%']));

    // 90 days: rollups, drawn as mean with a min/max band; the same buckets as the API's.
    await updated(page, () => page.check('#range input[value="90d"]'));
    expect(new URL(page.url()).searchParams.get('since')).toBe('90d');
    const h = await api<{ kind: string; points: { t: string; min: number; max: number }[] }>('/api/boxes/BX-00001/history?metric=battery&since=90d');
    expect(h.kind).toBe('rollup');
    expect(await page.getAttribute('#chart-battery', 'data-kind')).toBe('rollup');
    const rollup = await page.locator('table.chart-data[data-metric=battery] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [tr.querySelector('time')?.getAttribute('datetime'), tr.querySelectorAll('td')[2]?.textContent, tr.querySelectorAll('td')[3]?.textContent]),
    );
    expect(rollup).toEqual(h.points.map((p) => [p.t, `${p.min}%`, `${p.max}%`]));
    await page.close();
  });

  it('turns a box offline on an open page when a scenario disconnects it, at the next cycle, without a reload', async () => {
    const page = await browser.page();
    await page.goto(`${url}/`);
    await page.waitForSelector('body[data-updated]');
    const row = page.locator('#boxes tbody tr[data-serial="BX-00004"]');
    expect(await row.getAttribute('data-state')).toBe('online');
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    // The scenario disconnects BX-00004 at 30m: one cycle after that instant.
    await updated(page, () => rig.cycle(30 * MIN - 4 * MIN + 30_000));
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
    expect(await row.locator('td').first().textContent()).toContain('offline'); // told in words, not only colour
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42); // no reload
    expect(await page.textContent('.count-offline .n')).toBe('1');
    await page.close();
  });

  it('a hidden tab gives its live stream back: with six hidden tabs open a seventh still loads, and a tab shown again catches up', async () => {
    // One browser profile keeps at most six connections to a server, and a live page holds one.
    const hide = (p: Page, hidden: boolean) =>
      p.evaluate((h) => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
        document.dispatchEvent(new Event('visibilitychange'));
      }, hidden);
    const tabs: Page[] = [];
    for (let i = 0; i < 6; i++) {
      const tab = await browser.page();
      await tab.goto(`${url}/`);
      await tab.waitForSelector('body[data-updated]');
      await hide(tab, true);
      tabs.push(tab);
    }
    expect(await tabs[0]?.textContent('#live')).toBe('Live updates: paused while this tab is hidden.');
    const seventh = await browser.page();
    await seventh.goto(`${url}/uptime`, { timeout: 15_000 });
    await seventh.waitForSelector('body[data-updated]', { timeout: 15_000 });
    await expect.poll(() => seventh.textContent('#live')).toBe('Live updates: on (after every poll cycle).');
    // A tab shown again reconnects and updates at once.
    const first = tabs[0] as Page;
    const before = await first.getAttribute('body', 'data-updated');
    await hide(first, false);
    await first.waitForFunction((b) => document.body.dataset.updated !== b, before);
    await expect.poll(() => first.textContent('#live')).toBe('Live updates: on (after every poll cycle).');
    for (const t of [...tabs, seventh]) await t.close();
  });

  it('shows a hostile box name as text everywhere: no dialog, no injected element, no console error', async () => {
    const page = await browser.page();
    await page.goto(`${url}/`);
    await page.waitForSelector('body[data-updated]');
    const row = page.locator('#boxes tbody tr[data-serial="BX-00002"]');
    expect(await row.locator('.name').textContent()).toBe(XSS);
    expect(await page.locator('#boxes img').count()).toBe(0);
    await page.goto(`${url}/boxes/BX-00002?since=1h`);
    await page.waitForSelector('body[data-updated]');
    expect(await page.textContent('#title')).toBe(`${XSS} (BX-00002)`);
    expect(await page.locator('main img').count()).toBe(0);
    await page.goto(`${url}/firmware`);
    await page.waitForSelector('body[data-updated]');
    expect(await page.locator('main img').count()).toBe(0);
    await page.close();
    expect(browser.problems).toEqual([]);
  });

  it('creates a silence from the page with the token, which holds back the next notification at Slack; without the token the write is refused', async () => {
    const page = await browser.page();
    await page.goto(`${url}/silences`);
    await page.waitForSelector('body[data-updated]');
    // Refused without the token, and with a wrong one, and from another origin.
    const refused = await page.evaluate(async () => {
      const post = (headers: Record<string, string>) =>
        fetch('/api/silences', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ boxes: ['BX-00005'], for: '2h', comment: 'x' }) }).then((r) => r.status);
      return [await post({}), await post({ authorization: 'Bearer wrong-token-0000000000' })];
    });
    expect(refused).toEqual([401, 401]);
    // Chromium logs each refused request as a console error: those two were asked for.
    expect(browser.problems.splice(0)).toEqual([expect.stringContaining('401'), expect.stringContaining('401')]);
    const crossOrigin = await fetch(`${url}/api/silences`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' },
      body: JSON.stringify({ boxes: ['BX-00005'], for: '2h', comment: 'x' }),
    });
    expect(crossOrigin.status).toBe(403);
    expect((await api<{ silences: unknown[] }>('/api/silences')).silences).toEqual([]);

    await page.fill('#silence-form input[name=boxes]', 'BX-00005');
    await page.fill('#silence-form input[name=comment]', 'replacing the router');
    await page.click('#silence-form button[type=submit]');
    await page.fill('#token-input', TOKEN);
    await page.click('#token-dialog button[value=ok]');
    await page.waitForSelector('#silence-table tbody tr[data-state=active]');
    expect(await page.textContent('#form-result')).toMatch(/^Created silence/);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(page.url()).not.toContain(TOKEN);

    // BX-00005 (silenced) and BX-00006 (not) disconnect; only BX-00006 reaches Slack.
    const before = rig.slack.received.length;
    const boxes = rig.sim.sim.fleet.boxes.filter((b) => b.serial === 'BX-00005' || b.serial === 'BX-00006');
    rig.sim.sim.fleet.apply(boxes, { kind: 'disconnect' });
    await rig.cycle();
    await rig.slack.waitFor(before + 1);
    const texts = rig.slack.received.slice(before).flatMap((r) => slackTexts(r.body)).join('\n');
    expect(texts).toContain('BX-00006');
    expect(texts).not.toContain('BX-00005');
    const held = await api<{ transitions: { box: string | null; heldBack: string | null }[] }>('/api/alerts/transitions?since=1h');
    expect(held.transitions.find((t) => t.box === 'BX-00005')?.heldBack).toBe('silenced');

    // The alerts page tells both stories: BX-00005 held back by the silence, BX-00006 delivered to Slack.
    await page.goto(`${url}/alerts`);
    await page.waitForSelector('body[data-updated]');
    const silenced = page.locator('article[data-serial="BX-00005"]');
    expect(await silenced.textContent()).toContain('held back: silenced');
    const sent = page.locator('article[data-serial="BX-00006"] li[data-notifier="ops-slack"] li');
    expect(await sent.first().getAttribute('data-status')).toBe('delivered');
    expect(await sent.first().textContent()).toContain('1 attempt');
    await page.close();
  });

  it('shows a gateway outage in the header of an open page, and its end, without a reload', async () => {
    const page = await browser.page();
    await page.goto(`${url}/uptime`);
    await page.waitForSelector('body[data-updated]');
    expect(await page.getAttribute('#gateway', 'data-state')).toBe('ok');
    await updated(page, () => rig.cycle(40 * MIN + 30_000 - rig.clock.now() + Date.parse('2026-03-01T12:00:00Z')));
    await expect.poll(() => page.getAttribute('#gateway', 'data-state')).toBe('failing');
    // Relative times are measured on the daemon's clock (here a fake one, months from the browser's).
    expect(await page.textContent('#gateway')).toMatch(/^Gateway failing since just now \(unavailable\)/);
    await updated(page, () => rig.cycle(2 * MIN));
    await expect.poll(() => page.getAttribute('#gateway', 'data-state')).toBe('ok');
    expect(await page.textContent('#gateway')).toBe('Gateway OK: last cycle just now');
    // The outage split every box's history in two runs of the same firmware: no "change" is marked.
    const fw = await api<{ points: { value: string | null }[] }>('/api/boxes/BX-00003/history?metric=firmware&since=24h');
    expect(new Set(fw.points.map((p) => p.value)).size).toBe(1);
    expect(fw.points.length).toBeGreaterThan(1);
    const box = await browser.page();
    await box.goto(`${url}/boxes/BX-00003?since=24h`);
    await box.waitForSelector('body[data-updated]');
    expect(await box.locator('#legend li', { hasText: 'Firmware changed' }).count()).toBe(0);
    await box.close();
    // The uptime page drew its chart and one row of daily bars per box.
    expect(await page.locator('#fleet-chart canvas').count()).toBe(1);
    expect(await page.locator('#bars li').count()).toBe(12);
    await page.close();
    expect(browser.problems).toEqual([]);
  });
});
