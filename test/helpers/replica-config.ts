/**
 * The configuration of one `boxwatch run` replica in the failover and partition tests: every
 * account of `accounts` polled every second from its simulator, a 3 s lease, one disconnected
 * rule, and a Slack and a webhook receiver. Account keys are read from `KEY_<ACCOUNT>` (see
 * `replicaKeyVar`); `storage` is the YAML of the storage section (a SQLite path or a database URL).
 * Also the rig they start from (`startReplicaRig`: simulators, receivers, processes), what they
 * make boxes flap with, count deliveries with, and read a replicas' SQLite file with.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { expect } from 'vitest';
import { join } from 'node:path';
import type { SimBox } from '../../src/sim/fleet.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { DaemonProcesses } from './daemon-process.js';
import { startHttpReceiver, type HttpReceiver } from './http-receiver.js';
import { freePort } from './postgres.js';
import { startSlackReceiver, type SlackReceiver } from './slack-receiver.js';

export interface ReplicaConfig {
  dir: string;
  name: string;
  port: number;
  /** Account name -> its simulator's base URL. */
  accounts: ReadonlyMap<string, { url: string }>;
  /** The `storage:` section's value, e.g. `{ path: "/tmp/x.db" }`. */
  storage: string;
  slackUrl: string;
  hookUrl: string;
}

/** The environment variable holding `account`'s key. */
export const replicaKeyVar = (account: string): string => `KEY_${account.toUpperCase()}`;

/** Writes the replica's YAML into `dir` and returns its path. */
export function writeReplicaConfig(c: ReplicaConfig): string {
  const path = join(c.dir, `${c.name}.yaml`);
  const gateways = [...c.accounts]
    .map(([a, sim]) => `  - { name: ${a}, base_url: "${sim.url}", secret_key: "\${${replicaKeyVar(a)}}", timeout: 2s, schedule: "* * * * * *" }`)
    .join('\n');
  writeFileSync(
    path,
    `gateways:
${gateways}
storage: ${c.storage}
cluster: { lease: 3s, replica_id: ${c.name} }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 1s } }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${c.slackUrl}" }
  - { name: ops-hook, type: webhook, url: "${c.hookUrl}" }
http: { listen: "127.0.0.1:${c.port}" }
log: { level: info, format: json }
`,
  );
  return path;
}

/** What the replica tests run their `boxwatch run` processes against (`startReplicaRig`). */
export interface ReplicaRig {
  /** Account name -> its simulator (over real HTTP, real clock). */
  sims: Map<string, RunningSimulator>;
  slack: SlackReceiver;
  hook: HttpReceiver;
  /** A fresh directory for the configurations (and a SQLite file), removed by `close`. */
  dir: string;
  /** The replicas' processes, with every account's key in their environment (and `env`). */
  daemons: DaemonProcesses;
  /** Writes replica `name`'s configuration (`writeReplicaConfig`) on a free port, for `accounts` (default: every account). */
  config(name: string, storage: string, accounts?: readonly string[]): Promise<string>;
  /** Replica name -> the HTTP port its configuration listens on (set by `config`). */
  ports: Map<string, number>;
  /** Kills the processes still running and stops everything. */
  close(): Promise<void>;
}

/**
 * One simulator per account (`devices` boxes each, seeds `seed`, `seed + 1`, ...; every box
 * connected, or disconnected for the accounts in `disconnected`), a Slack and a webhook receiver,
 * a temporary directory and the replicas' DaemonProcesses: the rig every replica test starts from.
 */
export async function startReplicaRig(o: {
  accounts: readonly string[];
  devices: number;
  seed: number;
  /** The temporary directory's name prefix. */
  prefix: string;
  /** More environment for the processes (a database URL), made once the directory exists. */
  env?: (dir: string) => Record<string, string> | Promise<Record<string, string>>;
  disconnected?: readonly string[];
}): Promise<ReplicaRig> {
  const sims = new Map<string, RunningSimulator>();
  for (const [i, account] of o.accounts.entries()) {
    const sim = await startSimulator({ port: 0, key: `${account}-secret-key`, devices: o.devices, seed: o.seed + i });
    sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: o.disconnected?.includes(account) ? 'disconnect' : 'connect' });
    sims.set(account, sim);
  }
  const slack = await startSlackReceiver();
  const hook = await startHttpReceiver({ path: '/hook' });
  const dir = mkdtempSync(join(tmpdir(), o.prefix));
  const daemons = new DaemonProcesses({ ...Object.fromEntries(o.accounts.map((a) => [replicaKeyVar(a), `${a}-secret-key`])), ...(await o.env?.(dir)) });
  const ports = new Map<string, number>();
  return {
    sims,
    slack,
    hook,
    dir,
    daemons,
    ports,
    async config(name, storage, accounts = o.accounts) {
      const port = await freePort();
      ports.set(name, port);
      return writeReplicaConfig({ dir, name, port, accounts: new Map(accounts.map((a) => [a, sims.get(a) as RunningSimulator])), storage, slackUrl: slack.url, hookUrl: hook.url });
    },
    async close() {
      daemons.killAll(); // SIGKILL ends a stopped process too
      for (const sim of sims.values()) await sim.close();
      await slack.close();
      await hook.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** How many of `rows` there are per box and status (`"SERIAL status"` -> count). */
export function countByBoxAndStatus(rows: readonly { serial: string; status: string }[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) m.set(`${r.serial} ${r.status}`, (m.get(`${r.serial} ${r.status}`) ?? 0) + 1);
  return m;
}

/** Per box and status, the alerts a webhook receiver got (every request, answered or not). */
export function webhookAlertCounts(requests: readonly { body: unknown }[]): Map<string, number> {
  return countByBoxAndStatus(
    requests.flatMap((r) => (r.body as { alerts: { status: string; labels: { serial?: string } }[] }).alerts.map((a) => ({ serial: String(a.labels.serial), status: a.status }))),
  );
}

/**
 * Asserts that a webhook receiver got each notified transition (`expected`: "SERIAL status" ->
 * count) once and nothing else, counting a message sent again once: a re-send repeats the
 * message's body, so the only duplicates allowed are whole repeated messages, at most `maxResent`
 * (the one send per notifier in flight when a leader died or froze). Returns how many were repeated.
 */
export function expectEachDeliveredOnce(expected: ReadonlyMap<string, number>, requests: readonly { raw: string; body: unknown }[], maxResent = 1): number {
  const distinct = [...new Map(requests.map((r) => [r.raw, r])).values()];
  const got = webhookAlertCounts(distinct);
  for (const [key, n] of expected) expect(got.get(key) ?? 0, key).toBe(n);
  for (const key of got.keys()) expect(expected.has(key), `${key} was never a transition`).toBe(true);
  const resent = requests.length - distinct.length;
  expect(resent, 'messages sent again').toBeLessThanOrEqual(maxResent);
  return resent;
}

/** The rows of `sql` on the SQLite file the replicas share, read-only ([] before the file or its tables exist). */
export function sqliteRows<T>(dbPath: string, sql: string): T[] {
  if (!existsSync(dbPath)) return [];
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } catch {
    return []; // not created yet
  } finally {
    db.close();
  }
}

/** Boxes of simulators flapping: one change every 500 ms, round robin (a box disconnects, and at its next turn connects again). */
export class Flapping {
  /** Changes made so far. */
  count = 0;
  private readonly down = new Set<SimBox>();
  private loop: { running: boolean; done: Promise<void> } | null = null;

  constructor(private readonly boxes: readonly { sim: RunningSimulator; box: SimBox }[]) {}

  start(): void {
    if (this.loop !== null) return;
    const loop = { running: true, done: Promise.resolve() };
    loop.done = (async () => {
      while (loop.running) {
        this.flap();
        await new Promise((r) => setTimeout(r, 500)); // the world's pace (one change every 500 ms), not a wait for something
      }
    })();
    this.loop = loop;
  }

  /** Stops changing boxes (resolves after the change in progress); `start` goes on later. */
  async stop(): Promise<void> {
    const loop = this.loop;
    this.loop = null;
    if (loop === null) return;
    loop.running = false;
    await loop.done;
  }

  /** Stops, and connects every box again. */
  async settle(): Promise<void> {
    await this.stop();
    for (const { sim, box } of this.boxes) sim.sim.fleet.apply([box], { kind: 'connect' });
    this.down.clear();
  }

  private flap(): void {
    const { sim, box } = this.boxes[this.count % this.boxes.length]!;
    sim.sim.fleet.apply([box], { kind: this.down.has(box) ? 'connect' : 'disconnect' });
    if (this.down.has(box)) this.down.delete(box);
    else this.down.add(box);
    this.count += 1;
  }
}
