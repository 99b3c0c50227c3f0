/**
 * End-to-end rig: the simulator over real HTTP, the daemon (createApp) on a real SQLite file, a
 * real SMTP server read back with mailparser, and a real HTTP receiver for the Slack webhook.
 * Simulated time and the daemon share one FakeClock; tests step cycles with runOnce() and deliver
 * with deliverNow(), so nothing waits on real timers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type App, type AppDeps } from '../../src/app.js';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator, type RunningSimulator, type SimServerOptions } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';

export const KEY = 'e2e-account-key';

export interface Rig {
  sim: RunningSimulator;
  app: App<SqliteStore>;
  clock: FakeClock;
  smtp: SmtpReceiver;
  slack: SlackReceiver;
  dbPath: string;
  config: Config;
  /** What the console notifier printed: one entry per message (a block: header and alert lines). */
  console: string[];
  /** Advances the shared clock, runs one cycle, then one delivery pass. */
  cycle(advanceMs?: number): Promise<void>;
  /**
   * Stops the daemon and starts a fresh one on the same database (a restart). `whileDown` runs
   * while no daemon exists (change the fleet, move the clock).
   */
  restart(whileDown?: () => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export interface RigOptions {
  devices?: number;
  seed?: number;
  /** YAML for `rules:` and `alerting:` (indented as top-level keys). */
  yaml?: string;
  /** More simulator options (history calls, background calls, ...). */
  sim?: SimServerOptions;
  /** Simulator scenario YAML (`timeline:`), its times counted from the rig's start. */
  scenario?: string;
  /**
   * Serve HTTP (API and dashboard) on a free port: the app is started, with a schedule that never
   * fires during a test (cycles still run only through `cycle()`).
   */
  http?: { adminToken?: string; basePath?: string };
  /** The daemon's logger (default: silent). */
  logger?: Logger;
  /** More of the daemon's dependencies (the archive's file system). */
  app?: Pick<AppDeps, 'archiveFs'>;
  /** Where the shared clock starts (default 2026-03-01T12:00:00Z; e.g. an hour ago, for the CLI's wall-clock windows). */
  start?: string | number;
}

export async function startRig(options: RigOptions = {}): Promise<Rig> {
  const clock = new FakeClock(options.start ?? '2026-03-01T12:00:00Z');
  const scenario = options.scenario === undefined ? undefined : parseScenario(options.scenario, 'rig scenario');
  const sim = await startSimulator({ port: 0, key: KEY, devices: options.devices ?? 10, seed: options.seed ?? 5, clock, scenario, ...options.sim });
  const smtp = await startSmtpReceiver();
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-e2e-'));
  const dbPath = join(dir, 'boxwatch.db');
  const yaml = `
gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "${options.http ? '0 0 1 1 *' : '*/30 * * * * *'}" }
storage: { path: "${dbPath}" }
${options.yaml ?? 'rules:\n  - { name: box-offline, kind: disconnected, severity: critical }\nalerting: { group_wait: 0s }'}
notifiers:
  - { name: ops-mail, type: email, smtp_url: "${smtp.url()}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
  - { name: console, type: console }
${options.http ? `http: { listen: "127.0.0.1:0", base_path: "${options.http.basePath ?? '/'}"${options.http.adminToken ? ', admin_token: "${ADMIN_TOKEN}"' : ''} }` : 'http: false'}
`;
  const config = parseConfig(yaml, { KEY, ADMIN_TOKEN: options.http?.adminToken ?? '' }, 'e2e');
  const consoleLines: string[] = [];
  const stdout = {
    write(chunk: string, callback?: (err?: Error | null) => void): boolean {
      consoleLines.push(chunk.trimEnd()); // the console notifier writes a message in one piece
      callback?.();
      return true;
    },
  };
  const make = (): App<SqliteStore> =>
    createApp({
      config,
      logger: options.logger ?? silentLogger,
      clock,
      client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }),
      store: openStore(dbPath, { clock }),
      stdout,
      ...options.app,
    });
  const rig: Rig = {
    sim,
    app: make(),
    clock,
    smtp,
    slack,
    dbPath,
    config,
    console: consoleLines,
    async cycle(advanceMs = 30_000) {
      clock.advance(advanceMs);
      await rig.app.runOnce();
      await rig.app.deliverNow();
    },
    async restart(whileDown) {
      await rig.app.stop();
      await whileDown?.();
      rig.app = make();
      if (options.http) await rig.app.start();
    },
    async close() {
      await rig.app.stop();
      await sim.close();
      await smtp.close();
      await slack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (options.http) await rig.app.start();
  return rig;
}

/** Every simulated minute for `n` minutes: a call sync, a poll cycle, a delivery pass (the call tests' rhythm). */
export async function callMinutes(r: Rig, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    r.clock.advance(60_000);
    await r.app.runCallsOnce();
    await r.app.runOnce();
    await r.app.deliverNow();
  }
}

/** Every `text` string of a Slack payload (header, sections, fields, context), in order. */
export function slackTexts(body: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'text' && typeof value === 'string') out.push(value);
        else walk(value);
      }
    }
  };
  walk(body);
  return out;
}

/** The mrkdwn texts of a Slack payload (the top-level fallback and every mrkdwn element), where box text must be escaped. */
export function slackMrkdwn(body: unknown): string[] {
  const out: string[] = [];
  if (body !== null && typeof body === 'object' && typeof (body as { text?: unknown }).text === 'string') out.push((body as { text: string }).text);
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (record.type === 'mrkdwn' && typeof record.text === 'string') out.push(record.text);
      for (const value of Object.values(record)) walk(value);
    }
  };
  walk(body);
  return out;
}

/** The payload as Slack's Block Kit sees it (the shape boxwatch posts). */
export interface SlackBody {
  text: string;
  blocks: { type: string; text?: { type: string; text: string } }[];
  attachments: { color: string; blocks: { type: string; text?: { text: string }; fields?: { type: string; text: string }[]; elements?: unknown[] }[] }[];
}
