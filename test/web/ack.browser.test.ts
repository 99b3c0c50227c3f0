/// <reference lib="dom" />
/**
 * Acknowledging from the dashboard, in a real headless Chromium against a daemon (createApp, real
 * SQLite, the simulator over HTTP, a local Slack receiver) with repeat_interval 1h: the alerts page
 * offers Acknowledge on a firing alert, asks for the admin token, shows who acknowledged it (from the
 * daemon's next cycle, as for silences), and the
 * acknowledged alert stops repeating at Slack while the other one goes on. A hostile comment is shown
 * as text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackTexts, startRig, type Rig } from '../e2e/harness.js';
import { hasChromium, launchBrowser, type Browser } from '../helpers/browser.js';

const TOKEN = 'ack-browser-admin-token-0123456789';
const XSS = '<img src=x onerror=alert(1)>';
const HOUR = 3_600_000;

describe.skipIf(!hasChromium)('acknowledging from the dashboard', () => {
  let rig: Rig;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    rig = await startRig({
      devices: 3,
      http: { adminToken: TOKEN },
      yaml: 'rules:\n  - { name: box-offline, kind: disconnected, severity: critical }\nalerting: { group_wait: 0s, repeat_interval: 1h }',
      scenario: `
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 1m, box: BX-00001, disconnect: true }
  - { at: 1m, box: BX-00002, disconnect: true }
`,
    });
    for (let i = 0; i < 4; i++) await rig.cycle(30_000);
    url = rig.app.httpUrl as string;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  it('acknowledges a firing alert with the token; the page shows who; its repeats stop, the other alert repeats', async () => {
    const page = await browser.page();
    await page.goto(`${url}/alerts`);
    await page.waitForSelector('body[data-updated]');
    await page.waitForSelector('form.ack-form[data-alert="box-offline/BX-00001"]', { timeout: 5000 });
    const form = 'form.ack-form[data-alert="box-offline/BX-00001"]';
    await page.fill(`${form} input[name=comment]`, XSS);
    await page.click(`${form} button[type=submit]`);
    await page.fill('#token-input', TOKEN);
    await page.click('#token-dialog button[value=ok]');
    await page.waitForFunction(() => /^Acknowledged by dashboard; the daemon applies it at its next cycle\.$/.test(document.querySelector('form.ack-form[data-alert="box-offline/BX-00001"] .ack-result')?.textContent ?? ''));
    // The next cycle shows it on the open page, without a reload.
    await rig.cycle(30_000);
    await page.waitForSelector('article.alert-card[data-serial="BX-00001"] p.ack');
    const shown = await page.textContent('article.alert-card[data-serial="BX-00001"] p.ack');
    expect(shown).toMatch(/^Acknowledged by dashboard: <img src=x onerror=alert\(1\)> — no repeats until it resolves$/);
    expect(await page.locator('article.alert-card[data-serial="BX-00001"] img').count()).toBe(0);
    expect(await page.locator('form.ack-form[data-alert="box-offline/BX-00002"]').count()).toBe(1);
    expect(page.url()).not.toContain(TOKEN);
    expect(browser.problems).toEqual([]);

    const { alerts } = (await (await fetch(`${url}/api/alerts?active=true`)).json()) as { alerts: { id: string; ack: { by: string } | null }[] };
    expect(alerts.find((a) => a.id === 'box-offline/BX-00001')?.ack).toMatchObject({ by: 'dashboard', comment: XSS });

    const repeats = (serial: string): number => rig.slack.received.filter((r) => slackTexts(r.body).some((t) => t.includes(serial) && /still firing/i.test(t))).length;
    for (let i = 0; i < 6; i++) await rig.cycle(HOUR / 2);
    expect(repeats('BX-00002')).toBe(3);
    expect(repeats('BX-00001')).toBe(0);
  });
});
