/**
 * Reliability: the daemon on PostgreSQL when the database stops taking connections mid-run. The
 * app (createApp) on a PostgresStore on a throwaway server, the simulator over real HTTP on the
 * fake clock: the database is closed to connections and its sessions are ended; the next poll
 * cycle fails to be stored (counted as a failed cycle, logged, not a crash, nothing half-written);
 * /metrics still answers (with what was read last), the API and /healthz answer 503 naming no
 * database; once the database takes connections again the daemon carries on without a restart,
 * its alert state intact.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { createLogger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer, rawQuery } from '../helpers/postgres.js';

const KEY = 'pg-lost-key';

describeWithPostgres('the daemon on PostgreSQL when the database goes away', () => {
  let pg: PostgresServer;
  let sim: RunningSimulator;
  let app: App<PostgresStore>;
  const logs: string[] = [];
  const clock = new FakeClock('2026-03-01T12:00:00Z');

  beforeAll(async () => {
    pg = await PostgresServer.start();
    const scenario = parseScenario('timeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 1m, box: BX-00002, disconnect: true }\n', 'pg lost');
    sim = await startSimulator({ port: 0, key: KEY, devices: 3, seed: 4, clock, scenario });
    const config = parseConfig(
      `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "0 0 1 1 *" }
storage: { url: "\${DATABASE_URL}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
notifiers: []
http: { listen: "127.0.0.1:0" }
`,
      { KEY, DATABASE_URL: await pg.createDatabase('lost') },
      'pg lost',
    );
    const logger = createLogger({ level: 'info', format: 'json', colour: false, destination: new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }) });
    const store = await PostgresStore.open(config.storage.url as string, { clock, logger, connectTimeoutMs: 2_000 });
    app = createApp({ config, logger, clock, client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }), store });
    await app.start(); // the schedule never fires during the test: cycles run through runOnce()
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await sim?.close();
    pg?.stop();
  });

  const metric = async (name: string): Promise<number> => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(await app.metrics.text())?.[1] ?? 'NaN');

  it('a cycle that cannot be stored is a failed cycle, not a crash; the daemon carries on once the database is back', async () => {
    expect((await app.runOnce())?.cycle.outcome).toBe('ok');
    clock.advance(90_000); // BX-00002 is disconnected by now
    const admin = pg.url('postgres');
    await rawQuery(admin, 'ALTER DATABASE lost ALLOW_CONNECTIONS false');
    await rawQuery(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'lost'");

    expect(await app.runOnce()).toBeUndefined(); // nothing of it recorded
    expect(await metric('boxwatch_poll_cycles_total{outcome="failed"}')).toBe(1);
    expect(await metric('boxwatch_poll_cycle_crashes_total')).toBe(0);
    expect(logs.join('')).toContain('poll cycle could not be stored; its data is dropped and the next cycle tries again');
    const scrape = await fetch(`${app.httpUrl}/metrics`);
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^boxwatch_box_connected\{serial="BX-00002",name="[^"]*"\} 1$/m); // as last read
    for (const path of ['/healthz', '/api/boxes']) {
      const res = await fetch(`${app.httpUrl}${path}`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'store_unavailable', message: 'the database cannot be used right now (see the daemon log)' });
    }

    await rawQuery(admin, 'ALTER DATABASE lost ALLOW_CONNECTIONS true');
    clock.advance(30_000);
    expect((await app.runOnce())?.cycle.outcome).toBe('ok');
    expect((await app.alerts.states()).get('box-offline\u0000BX-00002')?.status).toBe('firing');
    expect(await metric('boxwatch_poll_cycle_crashes_total')).toBe(0);
  }, 60_000);
});
