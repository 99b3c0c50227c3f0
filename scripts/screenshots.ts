/**
 * `npm run screenshots`: runs `boxwatch demo` (the built CLI) and photographs each dashboard page
 * in headless Chromium at the moments of the demo's scenario worth showing, into docs/img/*.png
 * (committed; the README shows them). Same browser setup as the browser tests.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = join(root, 'docs', 'img');
const chromiumPath = process.env['BOXWATCH_CHROMIUM'] ?? '/usr/bin/chromium';
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const tmp = mkdtempSync(join(tmpdir(), 'boxwatch-screenshots-'));
const demo = spawn(process.execPath, [join(root, 'dist', 'src', 'main.js'), 'demo', '--duration', '130s', '--db', join(tmp, 'demo.db')], { stdio: ['ignore', 'pipe', 'inherit'] });
const started = Date.now();
const url = await new Promise<string>((resolve, reject) => {
  createInterface({ input: demo.stdout }).on('line', (line) => {
    const m = /^Dashboard: (http:\/\/\S+?)\/? /.exec(line);
    if (m) resolve(m[1] as string);
  });
  demo.once('exit', (code) => reject(new Error(`boxwatch demo exited with ${code}`)));
});
const at = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, started + seconds * 1000 - Date.now())));

mkdirSync(out, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'boxwatch-chromium-'));
const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath, headless: true, args, viewport: { width: 1280, height: 860 }, timezoneId: 'Europe/Paris', locale: 'en-GB' });
const page = await context.newPage();
const shot = async (path: string, file: string, fullPage = false): Promise<void> => {
  await page.goto(`${url}${path}`);
  await page.waitForSelector('body[data-updated]');
  await page.screenshot({ path: join(out, file), fullPage });
  console.log(`docs/img/${file}  (${path}, ${Math.round((Date.now() - started) / 1000)} s into the demo)`);
};
try {
  // The demo's timeline at 60x: BX-00003 offline from 10 s to 35 s, BX-00007's battery low at
  // 20 s and recharged at 70 s, BX-00011 stale from 30 s, the gateway down from 80 s to 92 s.
  await at(28);
  await shot('/', 'overview.png');
  await at(76);
  await shot('/boxes/BX-00007?since=1h', 'box.png', true);
  await shot('/alerts?show=24h', 'alerts.png');
  await at(88);
  await shot('/firmware', 'firmware.png');
  await at(100);
  await shot('/uptime?days=30', 'uptime.png');
  await shot('/silences', 'silences.png');
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  demo.kill('SIGINT');
  await new Promise((resolve) => demo.once('exit', resolve));
  rmSync(tmp, { recursive: true, force: true });
}
