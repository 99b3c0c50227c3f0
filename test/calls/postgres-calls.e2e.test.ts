/**
 * Calls and test calls with the daemon on PostgreSQL: the app (createApp) on a PostgresStore on a
 * throwaway PostgreSQL server, the simulator over real HTTP on the fake clock, a real Slack
 * receiver. A scheduled test call is placed within its caps (the reservation in PostgreSQL), the
 * call sync stores the calls there, and the failed test call raises test_call_failed once, judged
 * from what the sync stored; a box that placed no test call raises nothing. The same flow on
 * SQLite is test/calls/test-calls.e2e.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { silentLogger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { slackTexts } from '../e2e/harness.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';

const KEY = 'pg-calls-key';
const PHONE = '+14155550123';

describeWithPostgres('calls and test calls on PostgreSQL', () => {
  let pg: PostgresServer;
  let sim: RunningSimulator;
  let slack: SlackReceiver;
  let app: App<PostgresStore>;
  const clock = new FakeClock('2026-03-01T12:00:00Z');

  beforeAll(async () => {
    pg = await PostgresServer.start();
    const scenario = parseScenario('timeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 0s, calls_fail: { box: BX-00001, rate: 1 } }\n  - { at: 0s, calls_fail: { box: BX-00002, rate: 0 } }\n', 'pg calls');
    sim = await startSimulator({ port: 0, key: KEY, devices: 4, seed: 9, clock, scenario, historyCalls: 0 });
    slack = await startSlackReceiver();
    const config = parseConfig(
      `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "*/30 * * * * *" }
storage: { url: "\${DATABASE_URL}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s }
calls: { per_page: 100 }
test_calls:
  - { name: path-check, boxes: [BX-00001, BX-00002], to: "${PHONE}", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 1, total: 3 }, timeout: 10m, severity: warning }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
`,
      { KEY, DATABASE_URL: await pg.createDatabase('calls') },
      'pg calls',
    );
    const store = await PostgresStore.open(config.storage.url as string, { clock });
    app = createApp({ config, logger: silentLogger, clock, client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }), store });
    await app.runOnce(); // the fleet is known
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await sim?.close();
    await slack?.close();
    pg?.stop();
  });

  const testCallsTold = (serial: string): string[] => slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => t.includes('test call') && t.includes(serial));

  it('places the test calls within their caps, stores the synced calls, and raises test_call_failed once for the failed one', async () => {
    const attempts = await app.runTestCallsOnce();
    expect(attempts.map((a) => [a.serial, a.outcome])).toEqual([
      ['BX-00001', 'placed'],
      ['BX-00002', 'placed'],
    ]);
    // The daily cap of one call per box is counted in PostgreSQL: a second tick places nothing.
    expect((await app.runTestCallsOnce()).map((a) => a.outcome)).toEqual(['skipped', 'skipped']);

    for (let i = 0; i < 6; i++) {
      clock.advance(60_000);
      await app.runCallsOnce();
      await app.runOnce();
      await app.deliverNow();
    }
    const listed = await app.store.calls.list({ limit: 10 });
    expect(listed.filter((c) => c.testCall === 'path-check').map((c) => [c.serial, c.status]).sort()).toEqual([
      ['BX-00001', 'failed'],
      ['BX-00002', 'completed'],
    ]);
    const states = await app.alerts.states();
    expect(states.get('test_call_failed\u0000BX-00001')).toMatchObject({ status: 'firing', severity: 'warning', value: 'failed' });
    expect(states.get('test_call_failed\u0000BX-00002')).toBeUndefined();
    expect(testCallsTold('BX-00001')).toHaveLength(1);
    expect(testCallsTold('BX-00001')[0]).toMatch(/FIRING/);
    expect(testCallsTold('BX-00002')).toHaveLength(0);
  }, 120_000);
});
