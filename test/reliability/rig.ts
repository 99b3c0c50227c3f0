/**
 * The reliability rig: the simulator over real HTTP, the daemon (createApp) on a real SQLite file,
 * a real SMTP server and a real Slack webhook receiver, all on one FakeClock. Unlike the e2e rig
 * it lets a test choose the gateway client's timeout and retries, the notifiers' timeouts, and
 * it captures the daemon's JSON logs.
 *
 * The gateway client's backoff and Retry-After waits go through `clientClock`, which advances the
 * shared FakeClock instead of sleeping: a wait of 5 s costs no real time, and the simulator (on
 * the same clock) sees the request 5 s later, as it would in production.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createApp, type App } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import type { RequestEvent } from '../../src/gateway/types.js';
import { createLogger } from '../../src/log.js';
import { createNotifier, type Notifier } from '../../src/notify/index.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { connectionOf } from '../helpers/sqlite.js';

export const KEY = 'reliability-account-key';

/** Rules that would fire on every box if an outage were mistaken for data. */
export const BOX_RULES = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: box-stale, kind: stale, max_age: 1m, severity: warning }
  - { name: box-missing, kind: missing, severity: warning }
alerting: { group_wait: 0s, gateway: { unreachable_after: 3 } }`;

export interface RigOptions {
  devices?: number;
  seed?: number;
  /** YAML for `rules:` and `alerting:` (default BOX_RULES). */
  yaml?: string;
  /** Per-attempt gateway timeout of the client, real ms (default 2 s). */
  gatewayTimeoutMs?: number;
  /** Further attempts of a GET after a retryable failure (default 3). */
  retries?: number;
  /** The Slack notifier's timeout (default 5 s; the e-mail's stays 5 s, so a slow machine never times out SMTP). */
  slackTimeoutMs?: number;
  /** The gateway key the daemon is configured with (default KEY). */
  key?: string;
  /** `gateway.concurrency`: device-details requests in flight (default 8). */
  concurrency?: number;
  /** Where the daemon's client sends its requests (default the simulator; e.g. a hostile proxy in front of it). */
  gatewayUrl?: string;
  /** Extra YAML for the `gateway:` section, e.g. `max_body: { device_list: 1MiB }`. */
  gatewayYaml?: string;
}

/** One HTTP attempt the daemon made, with the (fake) time it ended. */
export interface Attempt extends RequestEvent {
  at: number;
}

export interface Rig {
  sim: RunningSimulator;
  app: App<SqliteStore>;
  clock: FakeClock;
  smtp: SmtpReceiver;
  slack: SlackReceiver;
  dbPath: string;
  config: Config;
  /** Every gateway attempt of every daemon started by this rig, in order. */
  attempts: Attempt[];
  /** The daemon's log records (parsed JSON lines). */
  logs: { level: number; msg: string; [key: string]: unknown }[];
  console: string[];
  /** Advances the shared clock, runs one cycle, then one delivery pass. */
  cycle(advanceMs?: number): Promise<void>;
  /** Stops the daemon and starts a new one on the same database, optionally with another key. */
  restart(options?: { key?: string; whileDown?: () => void | Promise<void> }): Promise<void>;
  /** `outcome` or `failed:<code>` of every recorded cycle, oldest first. */
  cycles(): string[];
  /** Rules of every alert transition, as `rule:serial:to`. */
  transitions(): string[];
  close(): Promise<void>;
}

export async function startRig(options: RigOptions = {}): Promise<Rig> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const sim = await startSimulator({ port: 0, key: KEY, devices: options.devices ?? 10, seed: options.seed ?? 5, clock });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  const smtp = await startSmtpReceiver();
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-rel-'));
  const dbPath = join(dir, 'boxwatch.db');
  const yaml = `
gateway: { base_url: "${options.gatewayUrl ?? sim.url}", secret_key: "\${KEY}", concurrency: ${options.concurrency ?? 8}${options.gatewayYaml === undefined ? '' : `, ${options.gatewayYaml}`} }
poll: { schedule: "*/30 * * * * *" }
storage: { path: "${dbPath}" }
${options.yaml ?? BOX_RULES}
notifiers:
  - { name: ops-mail, type: email, smtp_url: "${smtp.url()}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
  - { name: console, type: console }
http: false
`;
  const configFor = (key: string): Config => parseConfig(yaml, { KEY: key }, 'reliability');
  let config = configFor(options.key ?? KEY);
  const attempts: Attempt[] = [];
  const logs: Rig['logs'] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Rig['logs'][number]);
      done();
    },
  });
  const logger = createLogger({ level: 'debug', format: 'json', destination: logStream });
  const consoleLines: string[] = [];
  const stdout = {
    write(chunk: string, callback?: (err?: Error | null) => void): boolean {
      consoleLines.push(...chunk.split('\n').filter(Boolean));
      callback?.();
      return true;
    },
  };
  /** The client's clock: waits move the shared fake time forward at once. */
  const clientClock: Clock = {
    now: () => clock.now(),
    sleep: (ms, signal) => {
      signal?.throwIfAborted();
      clock.advance(ms);
      return Promise.resolve();
    },
  };
  const timeoutMs = 5_000;
  let current: App<SqliteStore> | undefined;
  const make = (): App<SqliteStore> => {
    const notifiers: Notifier[] = [
      createNotifier({ name: 'ops-mail', type: 'email', smtp_url: smtp.url(), from: 'boxwatch@example.com', to: ['ops@example.com'], timeout_ms: timeoutMs }),
      createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slack.url, timeout_ms: options.slackTimeoutMs ?? timeoutMs }),
      createNotifier({ name: 'console', type: 'console' }, { stdout }),
    ];
    current = createApp({
      config,
      logger,
      clock,
      notifiers,
      client: createGatewayClient({
        baseUrl: config.gateway.baseUrl,
        secretKey: config.gateway.secretKey,
        maxBodyBytes: { device_list: config.gateway.maxBody.deviceList, device_details: config.gateway.maxBody.deviceDetails },
        timeoutMs: options.gatewayTimeoutMs ?? 2_000,
        retries: options.retries ?? 3,
        connections: config.gateway.concurrency,
        clock: clientClock,
        onRequest: (e) => {
          attempts.push({ ...e, at: clock.now() });
          current?.metrics.observeRequest(e);
        },
      }),
      store: openStore(dbPath, { clock, logger }),
      stdout,
    });
    return current;
  };
  const rig: Rig = {
    sim,
    app: make(),
    clock,
    smtp,
    slack,
    dbPath,
    get config() {
      return config;
    },
    attempts,
    logs,
    console: consoleLines,
    async cycle(advanceMs = 30_000) {
      clock.advance(advanceMs);
      await rig.app.runOnce();
      await rig.app.deliverNow();
    },
    async restart(restartOptions = {}) {
      await rig.app.stop();
      await restartOptions.whileDown?.();
      if (restartOptions.key !== undefined) config = configFor(restartOptions.key);
      rig.app = make();
    },
    cycles() {
      const rows = connectionOf(rig.app.store).prepare('SELECT outcome, error_code FROM cycles ORDER BY started_at').all() as { outcome: string; error_code: string | null }[];
      return rows.map((r) => (r.outcome === 'ok' ? 'ok' : `failed:${r.error_code ?? '?'}`));
    },
    transitions() {
      return rig.app.store.transitions.transitionsSince(0).map((t) => `${t.rule}:${t.serial}:${t.to}`);
    },
    async close() {
      await rig.app.stop();
      await sim.close();
      await smtp.close();
      await slack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** Subjects of the e-mails received so far. */
export const subjects = (rig: Rig): string[] => rig.smtp.messages.map((m) => m.subject);
