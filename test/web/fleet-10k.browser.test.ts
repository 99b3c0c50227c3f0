/// <reference lib="dom" />
/**
 * A 10,000-box fleet in Chromium: the daemon polls a simulator of 10,000 boxes once, the overview
 * renders one page of boxes (never 10,000 rows of DOM), and paging walks the fleet, in the URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, type Rig } from '../e2e/harness.js';
import { hasChromium, launchBrowser, type Browser } from '../helpers/browser.js';

describe.skipIf(!hasChromium)('a 10,000-box fleet in Chromium', () => {
  let rig: Rig;
  let browser: Browser;

  beforeAll(async () => {
    rig = await startRig({ devices: 10_000, http: {} });
    await rig.cycle();
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  it('renders the overview a page at a time and pages through the fleet', async () => {
    const page = await browser.page();
    await page.goto(`${rig.app.httpUrl as string}/`);
    await page.waitForSelector('body[data-updated]');
    expect(await page.textContent('#count-total')).toBe('10000');
    const serials = () => page.locator('#boxes tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.serial));
    const first = await serials();
    expect(first).toHaveLength(50);
    expect(await page.locator('tr').count()).toBeLessThan(100);
    expect(await page.textContent('#pager')).toContain('Page 1 of 200');

    const changed = (before: string | null) => page.waitForFunction((b) => document.body.dataset.updated !== b, before);
    const before = await page.getAttribute('body', 'data-updated');
    await page.getByRole('button', { name: 'Next ›' }).click();
    await changed(before);
    const second = await serials();
    expect(second).toHaveLength(50);
    expect(second.filter((s) => first.includes(s))).toEqual([]);
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');

    // The last page, straight from a link, and back with the browser's history.
    await page.goto(`${rig.app.httpUrl as string}/?page=200`);
    await page.waitForSelector('body[data-updated]');
    expect(await serials()).toHaveLength(50);
    expect(await page.textContent('#pager')).toContain('Page 200 of 200');
    expect(await page.getByRole('button', { name: 'Next ›' }).isDisabled()).toBe(true);
    await page.goBack();
    await page.waitForSelector('body[data-updated]');
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');
    await page.close();
    expect(browser.problems).toEqual([]);
  });
});
