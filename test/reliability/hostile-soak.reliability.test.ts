/**
 * The bounds issue's acceptance run: the built daemon (`boxwatch run`, a real process) polls a
 * hostile gateway (test/reliability/hostile-gateway.ts in front of the simulator, real HTTP) that
 * sends each hostile input in turn: an endless device-list body, a record out of range, a 10 MB
 * device name, a Date header in 2100, device details that never come back. Through all of them
 * polling goes on, a box that disconnects meanwhile still reaches Slack, every Slack message
 * stays small, and the daemon's peak resident memory stays under 300 MB.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt } from '../e2e/build.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { rewriteJson, startHostileGateway, type HostileGateway } from './hostile-gateway.js';

const KEY = 'soak-key-0123456789';
const LIST = /\/box\/device-list/;
const DETAILS = /\/box\/device\//;

let dir: string;
let sim: RunningSimulator;
let gw: HostileGateway;
let slack: SlackReceiver;
let daemons: DaemonProcesses;
let daemon: ChildProcess;

/** Peak and current resident memory of the daemon, in MiB. */
function memoryMiB(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 };
}

const slackText = (): string[] => slack.received.map((r) => JSON.stringify(r.body));

/** Disconnects `serial` in the simulator and waits for its box-offline alert at Slack. */
async function disconnectAndExpectAlert(serial: string): Promise<void> {
  const box = sim.sim.fleet.boxes.find((b) => b.serial === serial);
  if (!box) throw new Error(`no box ${serial}`);
  sim.sim.fleet.apply([box], { kind: 'disconnect' });
  await daemons.until(`box-offline for ${serial} at Slack`, () => slackText().some((t) => new RegExp(`${serial}\\b`).test(t) && t.includes('disconnected')), 90_000).catch((err: Error) => {
    throw new Error(`${err.message}\nSlack received:\n${slackText().join('\n').slice(-3000)}`);
  });
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-soak-'));
  sim = await startSimulator({ port: 0, key: KEY, devices: 12, seed: 11 });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  gw = await startHostileGateway();
  gw.target = sim.url;
  slack = await startSlackReceiver();
  const config = join(dir, 'boxwatch.yaml');
  writeFileSync(
    config,
    `gateway: { base_url: "${gw.url}", secret_key: "\${KEY}", timeout: 2s, max_body: { device_list: 1MiB, device_details: 16MiB } }
poll: { schedule: "* * * * * *", details_every: 1s }
storage: { path: "${join(dir, 'boxwatch.db')}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical, for: 0s }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 2s } } # a send that timed out on a loaded machine is retried at once
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
log: { level: warn, format: json }
`,
  );
  daemons = new DaemonProcesses({ KEY });
  daemon = daemons.spawn(config);
}, 60_000);

afterAll(async () => {
  daemons?.killAll();
  await gw?.close();
  await sim?.close();
  await slack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the daemon against a hostile gateway, one input after another', () => {
  it('keeps polling and alerting through every input, with messages small and memory under 300 MB', async () => {
    const pid = daemon.pid as number;
    const serials = sim.sim.fleet.boxes.map((b) => b.serial);
    const hitsBefore = gw.hits(LIST);
    await daemons.until('the first cycles', () => gw.hits(LIST) >= hitsBefore + 2, 60_000);

    // 1. An endless device-list body: aborted at the 1 MiB limit, gateway_schema fires.
    gw.intercept = (req, res) => {
      if (!LIST.test(req.url ?? '')) return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[');
      const chunk = `${'{"serial_no":"X","name":"y"},'.repeat(2_000)}`;
      const pump = setInterval(() => (res.destroyed ? clearInterval(pump) : res.write(chunk)), 1);
      res.on('close', () => clearInterval(pump));
      return true;
    };
    await daemons.until('gateway_schema at Slack', () => slackText().some((t) => t.includes('gateway_schema')), 90_000);
    gw.intercept = null;
    await disconnectAndExpectAlert(serials[0] as string); // polling is back

    // 2. One record out of range: set aside, the rest of the fleet is watched.
    const odd = serials[1] as string;
    gw.intercept = (req, res, upstream) =>
      LIST.test(req.url ?? '') &&
      rewriteJson(res, upstream, (body) => {
        const rec = (body.data as { serial_no: string; battery_level: number | null }[]).find((d) => d.serial_no === odd);
        if (rec) rec.battery_level = 12.5;
      });
    await disconnectAndExpectAlert(serials[2] as string);

    // 3. A 10 MB device name (details may be 16 MiB here, so it arrives): stored and sent capped.
    const huge = serials[3] as string;
    gw.intercept = (req, res, upstream) =>
      DETAILS.test(req.url ?? '') &&
      (req.url ?? '').includes(huge) &&
      rewriteJson(res, upstream, (body) => {
        (body.data as { name?: string }).name = 'N'.repeat(10_000_000);
      });
    await disconnectAndExpectAlert(huge);

    // 4. A Date header in 2100: ignored (gateway_clock), no box goes stale.
    gw.intercept = (req, res, upstream) => rewriteJson(res, upstream, () => undefined, { date: 'Fri, 01 Jan 2100 00:00:00 GMT' });
    await daemons.until('gateway_clock at Slack', () => slackText().some((t) => t.includes('gateway_clock')), 90_000);
    await disconnectAndExpectAlert(serials[4] as string);

    // 5. Device details that never come back: the cycle ends at its deadline, the list still alerts.
    gw.intercept = (req) => DETAILS.test(req.url ?? ''); // hold the request open, never answer
    await disconnectAndExpectAlert(serials[5] as string);
    gw.intercept = null;

    expect(daemon.exitCode).toBeNull(); // still running
    for (const text of slackText()) expect(text.length).toBeLessThan(40_000);
    const { peak } = memoryMiB(pid);
    if (process.env['BOXWATCH_SOAK_REPORT']) console.log(`daemon peak RSS ${peak.toFixed(0)} MiB`);
    expect(peak).toBeLessThan(300);
  }, 480_000); // bounds for a loaded machine: each step waits for its condition
});
