/**
 * A rig of two accounts for the end-to-end tests of several accounts: two simulators over real
 * HTTP (acme and globex, each with its own key and the same serials BX-00001..3, all connected),
 * the daemon built from a `gateways:` configuration (its own gateway clients), a real SQLite file,
 * a real Slack webhook receiver, and with `http` the API and the dashboard on a free port (the
 * schedule never fires: cycles run through `cycle()`). One FakeClock drives everything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';

export const ACME_KEY = 'acme-secret-key-1';
export const GLOBEX_KEY = 'globex-secret-key-2';

export interface AccountsRig {
  clock: FakeClock;
  acme: RunningSimulator;
  globex: RunningSimulator;
  slack: SlackReceiver;
  app: App;
  dbPath: string;
  /** Advances the clock 30 s, runs a cycle of every account, then a delivery pass. */
  cycle(): Promise<void>;
  close(): Promise<void>;
}

export async function startAccountsRig(options: { http?: boolean; rules?: string; logger?: Logger } = {}): Promise<AccountsRig> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const acme = await startSimulator({ port: 0, key: ACME_KEY, devices: 3, seed: 1, clock });
  const globex = await startSimulator({ port: 0, key: GLOBEX_KEY, devices: 3, seed: 2, clock });
  for (const sim of [acme, globex]) sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-accounts-'));
  const dbPath = join(dir, 'boxwatch.db');
  const config = parseConfig(
    `
gateways:
  - name: acme
    base_url: "${acme.url}"
    secret_key: \${ACME_KEY}
  - name: globex
    base_url: "${globex.url}"
    secret_key: \${GLOBEX_KEY}
poll: { schedule: "${options.http === true ? '0 0 1 1 *' : '*/30 * * * * *'}" }
storage: { path: "${dbPath}" }
${options.rules ?? `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: box-stale, kind: stale, max_age: 2m, severity: warning }
  - { name: box-missing, kind: missing, severity: warning }`}
alerting: { group_wait: 0s }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
${options.http === true ? 'http: { listen: "127.0.0.1:0" }' : 'http: false'}
`,
    { ACME_KEY, GLOBEX_KEY },
    'accounts rig',
  );
  const app = createApp({ config, logger: options.logger ?? silentLogger, clock, store: openStore(dbPath, { clock }) });
  if (options.http === true) await app.start();
  const rig: AccountsRig = {
    clock,
    acme,
    globex,
    slack,
    app,
    dbPath,
    async cycle() {
      clock.advance(30_000);
      await app.runOnce(); // every account in turn
      await app.deliverNow();
    },
    async close() {
      await app.stop();
      await acme.close();
      await globex.close();
      await slack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await rig.cycle();
  return rig;
}
