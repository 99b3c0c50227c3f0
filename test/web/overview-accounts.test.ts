/**
 * One daemon, one SQLite file, two accounts polled in the same tick: each account's cycle keeps
 * its own start, so acme's cycle (its gateway slow) starts first and commits last. The
 * dashboard's overview (`/api/overview`, what the Fleet page reloads after each cycle's live
 * event) shows each account as its latest cycle left it, as /api/boxes does. Real HTTP, the
 * simulator over HTTP, createApp.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { requestArrives } from '../helpers/wait.js';

const KEYS = { acme: 'acme-overview-key', globex: 'globex-overview-key' };
const sims: RunningSimulator[] = [];
let app: App<SqliteStore> | undefined;
let dir: string | undefined;

afterEach(async () => {
  await app?.stop();
  for (const s of sims.splice(0)) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Two simulated accounts of one box each (battery 50) and a started app polling both, never on its own schedule. */
async function startTwoAccounts(): Promise<{ acme: RunningSimulator; globex: RunningSimulator; app: App<SqliteStore> }> {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-overview-accounts-'));
  const simClock = new FakeClock('2026-03-01T12:00:00Z');
  const [acme, globex] = await Promise.all(
    (['acme', 'globex'] as const).map(async (account, i) => {
      const s = await startSimulator({ port: 0, key: KEYS[account], devices: 1, seed: i + 1, clock: simClock });
      s.sim.fleet.apply(s.sim.fleet.boxes, { kind: 'connect' });
      s.sim.fleet.apply(s.sim.fleet.boxes, { kind: 'battery', level: 50 });
      sims.push(s);
      return s;
    }),
  );
  const config = parseConfig(
    `
gateways:
  - { name: acme, base_url: "${acme!.url}", secret_key: "${KEYS.acme}" }
  - { name: globex, base_url: "${globex!.url}", secret_key: "${KEYS.globex}" }
poll: { schedule: "0 0 1 1 *" }
storage: { path: "${join(dir, 'bw.db')}" }
rules: []
notifiers: []
http: { listen: "127.0.0.1:0" }
`,
    {},
  );
  app = createApp({ config, logger: silentLogger, store: openStore(join(dir, 'bw.db')) });
  await app.start();
  return { acme: acme!, globex: globex!, app };
}

it('the overview shows an account whose cycle started first and committed last as that cycle left it', async () => {
  const { acme, globex, app: running } = await startTwoAccounts();
  await running.runOnce('acme');
  await running.runOnce('globex');
  const batteries = async (path: string): Promise<Record<string, number | null>> => {
    const body = (await (await fetch(`${running.httpUrl}${path}`)).json()) as { boxes: { serial: string; battery: number | null }[] };
    return Object.fromEntries(body.boxes.map((b) => [b.serial, b.battery]));
  };
  expect(await batteries('/api/overview?per=100')).toEqual({ 'acme/BX-00001': 50, 'globex/BX-00001': 50 });

  // One tick: acme's device list is slow, so acme's cycle starts before globex's and commits after it.
  acme.sim.fleet.apply(acme.sim.fleet.boxes, { kind: 'battery', level: 30 });
  globex.sim.fleet.apply(globex.sim.fleet.boxes, { kind: 'battery', level: 20 });
  acme.sim.inject({ latencyMs: 1_500, endpoints: ['device_list'] });
  const acmeAsked = requestArrives(acme.sim, 'device_list');
  const slow = running.runOnce('acme');
  await acmeAsked;
  await running.runOnce('globex');
  expect((await batteries('/api/overview?per=100'))['globex/BX-00001']).toBe(20); // the page asks after globex's event
  await slow;
  expect(await batteries('/api/overview?per=100')).toEqual({ 'acme/BX-00001': 30, 'globex/BX-00001': 20 }); // and again after acme's
  expect(await batteries('/api/boxes')).toEqual({ 'acme/BX-00001': 30, 'globex/BX-00001': 20 });
}, 60_000);

it.each([
  { slow: 'acme', fast: 'globex' },
  { slow: 'globex', fast: 'acme' },
] as const)('two runOnce calls under way at once each return their own account\'s cycle ($slow slow, started first)', async ({ slow, fast }) => {
  const accounts = await startTwoAccounts();
  accounts[slow].sim.inject({ latencyMs: 1_000, endpoints: ['device_list'] });
  const slowAsked = requestArrives(accounts[slow].sim, 'device_list');
  const slowCycle = accounts.app.runOnce(slow);
  await slowAsked;
  const fastCycle = await accounts.app.runOnce(fast);
  expect(fastCycle?.cycle.account).toBe(fast);
  expect(fastCycle?.seen.map((b) => b.serial)).toEqual([`${fast}/BX-00001`]);
  const slowResult = await slowCycle;
  expect(slowResult?.cycle.account).toBe(slow);
  expect(slowResult?.seen.map((b) => b.serial)).toEqual([`${slow}/BX-00001`]);
}, 60_000);

it('a runOnce of an account whose cycle is under way is skipped (undefined) and leaves that cycle to the first call', async () => {
  const accounts = await startTwoAccounts();
  accounts.acme.sim.inject({ latencyMs: 1_000, endpoints: ['device_list'] });
  const asked = requestArrives(accounts.acme.sim, 'device_list');
  const first = accounts.app.runOnce('acme');
  await asked;
  expect(await accounts.app.runOnce('acme')).toBeUndefined();
  expect((await first)?.cycle.account).toBe('acme');
}, 60_000);
