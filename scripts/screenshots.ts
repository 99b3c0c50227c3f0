/**
 * `npm run screenshots`: runs `boxwatch demo` (the built CLI) and photographs each dashboard page
 * in headless Chromium at the moments of the demo's scenario worth showing, into docs/img/*.png
 * (committed; the README shows them). Same browser setup as the browser tests.
 * Then `replicas.png`: two `boxwatch run` replicas (`cluster:`) of three simulated accounts on one
 * SQLite file, the Fleet page of replica-a while replica-b is frozen (SIGSTOP) past its lease, so
 * that its account shows "nobody (lease expired …)" before replica-a takes it over.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startSimulator, type RunningSimulator } from '../src/sim/server.js';

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
  await replicasShot();
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  demo.kill('SIGINT');
  await new Promise((resolve) => demo.once('exit', resolve));
  rmSync(tmp, { recursive: true, force: true });
}

/** Three accounts served by two replicas (30 s leases); replica-b frozen until its lease has expired. */
async function replicasShot(): Promise<void> {
  const accounts = ['acme', 'globex', 'initech'];
  const sims: RunningSimulator[] = [];
  const replicas: ChildProcess[] = [];
  const db = join(tmp, 'replicas.db');
  try {
    for (const [i, a] of accounts.entries()) {
      const sim = await startSimulator({ port: 0, key: `${a}-key`, devices: 4, seed: 3 + i });
      sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
      sims.push(sim);
    }
    const ports = [19_464, 19_465];
    for (const [i, name] of ['replica-a', 'replica-b'].entries()) {
      const config = join(tmp, `${name}.yaml`);
      const gateways = accounts.map((a, j) => `  - { name: ${a}, base_url: "${sims[j]?.url ?? ''}", secret_key: "${a}-key", schedule: "*/5 * * * * *" }`).join('\n');
      writeFileSync(config, `gateways:\n${gateways}\nstorage: { path: "${db}" }\ncluster: { replica_id: ${name} }\nhttp: { listen: "127.0.0.1:${ports[i] ?? 0}" }\n`);
      replicas.push(spawn(process.execPath, [join(root, 'dist', 'src', 'main.js'), 'run', '--config', config], { stdio: 'ignore' }));
    }
    const base = `http://127.0.0.1:${ports[0] ?? 0}`;
    const cluster = async (): Promise<{ accounts: { state: string; replica: string | null }[] }> => {
      try {
        return (await (await fetch(`${base}/api/cluster`)).json()) as { accounts: { state: string; replica: string | null }[] };
      } catch {
        return { accounts: [] }; // not listening yet
      }
    };
    const until = async (check: (c: Awaited<ReturnType<typeof cluster>>) => boolean): Promise<void> => {
      while (!check(await cluster())) await new Promise((r) => setTimeout(r, 100));
    };
    await until((c) => c.accounts.filter((s) => s.state === 'serving').length === 3 && c.accounts.some((s) => s.replica === 'replica-b'));
    replicas[1]?.kill('SIGSTOP');
    await until((c) => c.accounts.some((s) => s.state === 'expired'));
    await page.goto(`${base}/`);
    await page.waitForSelector('#replicas:not([hidden]) #servers tbody tr');
    await page.screenshot({ path: join(out, 'replicas.png'), fullPage: true });
    console.log('docs/img/replicas.png  (replica-a, replica-b frozen past its lease)');
  } finally {
    for (const r of replicas) {
      r.kill('SIGCONT');
      r.kill('SIGKILL');
    }
    for (const sim of sims) await sim.close();
  }
}
