/**
 * A real headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, which downloads
 * no browser. One browser per test file, with a fresh profile directory removed at close. Every
 * page opened through it records console errors, uncaught page errors and dialogs, so that a test
 * can assert that none happened.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env['BOXWATCH_CHROMIUM'] ?? '/usr/bin/chromium';
/** False when the browser is not installed: browser tests skip with a message saying so. */
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  /** A new tab; its problems are appended to `problems`. */
  page(): Promise<Page>;
  /** Console errors, page errors and dialogs seen on any page, as text. */
  problems: string[];
  close(): Promise<void>;
}

export async function launchBrowser(options: { viewport?: { width: number; height: number } } = {}): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'boxwatch-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: options.viewport ?? { width: 1280, height: 900 },
    timezoneId: 'Europe/Paris',
    locale: 'en-GB',
  });
  const problems: string[] = [];
  const watch = (page: Page): void => {
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.type()} ${d.message()}`);
      void d.dismiss();
    });
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    context,
    problems,
    page: () => context.newPage(),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
