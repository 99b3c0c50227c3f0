/**
 * A daemon for CLI tests: the simulator over real HTTP, createApp on a real SQLite file, a real
 * SMTP receiver and a real Slack webhook receiver, and the configuration written to a file so that
 * the CLI reads the same one (`--config`). Unlike test/e2e/harness.ts, the shared FakeClock starts
 * at the real time: the CLI stamps silences with the real clock, so both must roughly agree.
 * Each cycle moves the fake clock ahead of real time, never behind it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type App } from '../../src/app.js';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { startHttpServer, type RunningHttpServer } from '../../src/http/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import type { SimBox } from '../../src/sim/fleet.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { alertViewSource } from '../../src/views/alerts.js';
import { apiReader } from '../../src/views/api-reader.js';
import { createLiveEvents } from '../../src/web/live.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';

export const KEY = 'cli-rig-secret-key-5f2a91';

export interface CliRig {
  sim: RunningSimulator;
  app: App<SqliteStore>;
  clock: FakeClock;
  smtp: SmtpReceiver;
  slack: SlackReceiver;
  dir: string;
  dbPath: string;
  configPath: string;
  /** Environment for the CLI (the secret key and SMTP/Slack URLs come from it). */
  env: NodeJS.ProcessEnv;
  /** Advances the clock, runs one cycle and one delivery pass. */
  cycle(advanceMs?: number): Promise<void>;
  box(serial: string): SimBox;
  close(): Promise<void>;
}

export const RIG_RULES = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: battery-low, kind: low_battery, below: 20, clear_above: 25, severity: warning }
alerting: { group_wait: 0s }`;

export async function startCliRig(options: { devices?: number; rules?: string } = {}): Promise<CliRig> {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
  const sim = await startSimulator({ port: 0, key: KEY, devices: options.devices ?? 6, seed: 11, clock });
  const smtp = await startSmtpReceiver();
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-cli-'));
  const dbPath = join(dir, 'boxwatch.db');
  const configPath = join(dir, 'boxwatch.yaml');
  const yaml = `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }
storage: { path: "${dbPath}" }
http: false
${options.rules ?? RIG_RULES}
notifiers:
  - { name: ops-mail, type: email, smtp_url: "\${SMTP_URL}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "\${SLACK_WEBHOOK_URL}" }
`;
  writeFileSync(configPath, yaml);
  const env = { BOXWATCH_SECRET_KEY: KEY, SMTP_URL: smtp.url(), SLACK_WEBHOOK_URL: slack.url };
  const config = parseConfig(yaml, env, configPath);
  const app = createApp({
    config,
    logger: silentLogger,
    clock,
    client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }),
    store: openStore(dbPath, { clock }),
  });
  // Every box connected and charged: no alert but the ones a test causes.
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'battery', level: 90 });
  const rig: CliRig = {
    sim,
    app,
    clock,
    smtp,
    slack,
    dir,
    dbPath,
    configPath,
    env,
    async cycle(advanceMs = 30_000) {
      clock.advance(advanceMs);
      await app.runOnce();
      await app.deliverNow();
    },
    box(serial) {
      const box = sim.sim.fleet.get(serial);
      if (!box) throw new Error(`no box ${serial}`);
      return box;
    },
    async close() {
      await app.stop();
      await sim.close();
      await smtp.close();
      await slack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await rig.cycle(0);
  return rig;
}

/**
 * The real HTTP server (JSON API and dashboard) over the rig's app, wired as `boxwatch run` wires
 * it, on a free port; `adminToken` allows the API's writes (silences, acks).
 */
export async function startRigHttp(rig: CliRig, options: { adminToken?: string } = {}): Promise<RunningHttpServer> {
  const parsed = parseConfig(readFileSync(rig.configPath, 'utf8'), rig.env, rig.configPath);
  const config: Config = options.adminToken === undefined ? parsed : { ...parsed, http: { ...parsed.http, adminToken: options.adminToken } };
  const { store } = rig.app;
  return startHttpServer({
    listen: '127.0.0.1:0',
    store,
    metrics: rig.app.metrics,
    clock: rig.clock,
    health: { maxCycleAgeMs: 60_000 },
    alerts: apiReader(alertViewSource(store, rig.app.alerts, store.acks), config, rig.clock),
    dashboard: { alerts: store.alerts, acks: store.acks, config, events: createLiveEvents() },
    logger: silentLogger,
  });
}
