/// <reference lib="dom" />
/**
 * The box page's call-failure chart in a real headless Chromium: a daemon (createApp, real
 * SQLite) reading the simulator's background calls over real HTTP, one box's calls failing from
 * 20 minutes on. The chart sits after the signal chart and draws exactly the API's buckets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rig } from '../e2e/harness.js';
import { startCallsRig } from '../calls/rig.js';
import { hasChromium, launchBrowser, type Browser } from '../helpers/browser.js';

describe.skipIf(!hasChromium)('call failures on the box page', () => {
  let rig: Rig;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    rig = await startCallsRig({ minutes: 60 });
    url = rig.app.httpUrl as string;
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  it('charts the failed share of the calls per bucket next to signal: the points equal the API answer', async () => {
    const page = await browser.page();
    await page.goto(`${url}/boxes/BX-00003?since=1h`);
    await page.waitForSelector('body[data-updated]');
    const api = (await (await fetch(`${url}/api/boxes/BX-00003/calls?since=1h`)).json()) as { buckets: { t: string; failedPercent: number | null }[] };
    const table = await page.locator('table.chart-data[data-metric=call_failures] tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({ t: tr.querySelector('time')?.getAttribute('datetime'), value: tr.querySelectorAll('td')[1]?.textContent })),
    );
    expect(table).toEqual(api.buckets.map((b) => ({ t: b.t, value: b.failedPercent === null ? '–' : `${b.failedPercent}%` })));
    expect(table.slice(-4).filter((r) => r.value !== '–').every((r) => r.value === '100%')).toBe(true);
    expect(await page.locator('#chart-call_failures canvas').count()).toBe(1);
    const captions = await page.locator('#charts figcaption').allTextContents();
    expect(captions).toEqual(['Battery', 'Signal', 'Call failures', 'Connected']);
    expect(browser.problems).toEqual([]);
    await page.close();
  });
});
