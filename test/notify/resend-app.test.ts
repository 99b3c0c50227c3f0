/**
 * The daemon's resends (src/app.ts wires src/notify/resend.ts): an Alertmanager receiver hears the
 * firing alerts again every resend interval, labelled with the box as the latest cycle saw it.
 * The simulator over real HTTP, createApp on a real SQLite file, a real HTTP receiver, one FakeClock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';

const KEY = 'resend-app-key';
const MINUTE = 60_000;

interface AlertmanagerAlert {
  labels: Record<string, string>;
  endsAt: string;
}

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

async function start(): Promise<{ app: App<SqliteStore>; sim: RunningSimulator; clock: FakeClock; receiver: HttpReceiver }> {
  const clock = new FakeClock(Date.parse('2026-11-24T09:00:00Z'));
  const sim = await startSimulator({ port: 0, key: KEY, devices: 3, seed: 5, clock });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  const receiver = await startHttpReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-resend-'));
  const dbPath = join(dir, 'boxwatch.db');
  const yaml = `gateway: { base_url: "${sim.url}", secret_key: "${KEY}" }
poll: { schedule: "0 0 0 1 1 *" }
storage: { path: "${dbPath}" }
http: false
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s }
notifiers:
  - { name: am, type: alertmanager, url: "${receiver.url}", resend_interval: 1m }
`;
  const config = parseConfig(yaml, {}, join(dir, 'boxwatch.yaml'));
  const app = createApp({
    config,
    logger: silentLogger,
    clock,
    client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }),
    store: openStore(dbPath, { clock }),
  });
  cleanup = async () => {
    await app.stop();
    await sim.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { app, sim, clock, receiver };
}

describe('resending firing alerts to Alertmanager', () => {
  it('resends the firing alert every interval, labelled with the box as the latest cycle saw it', async () => {
    const { app, sim, clock, receiver } = await start();
    const box = sim.sim.fleet.boxes[0];
    if (box === undefined) throw new Error('no box');
    box.name = 'Front desk <b>';
    sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await app.runOnce();
    await app.deliverNow();
    const [first] = await receiver.waitFor(1);
    const fired = (first?.body as AlertmanagerAlert[]).find((a) => a.labels.serial === box.serial);
    expect(fired?.labels).toMatchObject({ rule: 'box-offline', box: 'Front desk <b>', location: box.location });

    await app.start();
    clock.advance(MINUTE);
    const resent = (await receiver.waitFor(2))[1]?.body as AlertmanagerAlert[];
    expect(resent.map((a) => a.labels.serial)).toEqual([box.serial]);
    expect(resent[0]?.labels).toMatchObject({ box: 'Front desk <b>', location: box.location });
    expect(Date.parse(resent[0]?.endsAt ?? '')).toBeGreaterThan(clock.now());

    // The box is renamed; after the next cycle the resend carries the new name, not a remembered one.
    box.name = 'Reception';
    await app.runOnce();
    clock.advance(MINUTE);
    const again = (await receiver.waitFor(3))[2]?.body as AlertmanagerAlert[];
    expect(again[0]?.labels).toMatchObject({ serial: box.serial, box: 'Reception' });
  });
});
