/**
 * What every replica shows of the fleet, when each account's cycle reads and publishes only its
 * own account's part (src/http/snapshot.ts, CycleScope): two replicas (createApp with `cluster:`,
 * the real coordinator on the real clock, 3 s leases) on one real PostgreSQL database, each
 * leading one of two accounts, each account's gateway a simulator over real HTTP.
 *
 * After every cycle, on both replicas, /api/boxes and /metrics show every box of both accounts
 * with its latest values, those the other replica stored included; a box changed in the account
 * the other replica leads shows changed after that account's next cycle; an alert raised by
 * either account's cycle is counted by both replicas' /metrics.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { appTeardown } from '../helpers/app-teardown.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { bySerial, parsePromText } from '../http/prom-text.js';
import { until } from '../helpers/wait.js';

const ACCOUNTS = ['acme', 'globex'] as const;
const KEYS = { acme: 'acme-snapshot-key', globex: 'globex-snapshot-key' };

const waitUntil = (what: string, cond: () => boolean, timeoutMs = 30_000): Promise<unknown> => until(what, cond, { timeoutMs, everyMs: 50 });

describeWithPostgres('two replicas on PostgreSQL: the fleet each one shows', () => {
  let server: PostgresServer;
  const teardown = appTeardown<PostgresStore>();
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server.stop());

  it('after each cycle, both replicas show every box of both accounts with its latest values; a box changed in the other replica\'s account shows changed after its next cycle', async () => {
    const url = await server.cleanDatabase('snapshot');
    const simClock = new FakeClock('2026-03-01T12:00:00Z'); // the fleets' values stay as set
    const sims: Record<string, RunningSimulator> = {};
    for (const [i, account] of ACCOUNTS.entries()) {
      const sim = await startSimulator({ port: 0, key: KEYS[account], devices: 3, seed: i + 1, clock: simClock });
      sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
      sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'battery', level: 50 });
      sims[account] = teardown.closeAfter(sim);
    }
    const replica = async (id: string): Promise<App<PostgresStore>> => {
      const config = parseConfig(
        `
gateways:
${ACCOUNTS.map((a) => `  - { name: ${a}, base_url: "${sims[a]!.url}", secret_key: "${KEYS[a]}" }`).join('\n')}
poll: { schedule: "0 0 1 1 *" }
storage: { url: "${url}" }
cluster: { lease: 3s, replica_id: ${id} }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
notifiers: []
http: { listen: "127.0.0.1:0" }
`,
        {},
        id,
      );
      const app = teardown.add(createApp({ config, logger: silentLogger, store: await PostgresStore.open(url) }));
      await app.start();
      return app;
    };
    const a = await replica('replica-a');
    await waitUntil('replica-a leads both accounts', () => ACCOUNTS.every((x) => a.replica!.holds(x)));
    const b = await replica('replica-b');
    await waitUntil('each replica leads one account', () => ACCOUNTS.every((x) => a.replica!.holds(x) !== b.replica!.holds(x)) && ACCOUNTS.some((x) => b.replica!.holds(x)));
    const leader = (account: string): App<PostgresStore> => (a.replica!.holds(account) ? a : b);

    /** The batteries each replica's API and /metrics show, by box id. */
    const shown = async (app: App<PostgresStore>): Promise<{ api: Record<string, number | null>; metrics: Record<string, number> }> => {
      const boxes = ((await (await fetch(`${app.httpUrl}/api/boxes`)).json()) as { boxes: { serial: string; battery: number | null }[] }).boxes;
      const metrics = bySerial(parsePromText(await (await fetch(`${app.httpUrl}/metrics`)).text()).samples, 'boxwatch_box_battery_percent');
      return { api: Object.fromEntries(boxes.map((x) => [x.serial, x.battery])), metrics };
    };
    /** What both replicas must show: every box of both accounts, each with its simulator's battery now. */
    const expected = (): Record<string, number> =>
      Object.fromEntries(ACCOUNTS.flatMap((account) => sims[account]!.sim.fleet.boxes.map((box) => [`${account}/${box.serial}`, Math.round(box.charge)])));
    const bothShowTheFleet = async (): Promise<void> => {
      for (const app of [a, b]) {
        const { api, metrics } = await shown(app);
        expect(api).toEqual(expected());
        expect(metrics).toEqual(expected());
      }
    };

    // The first cycle of each account, each on its leader.
    for (const account of ACCOUNTS) await leader(account).runOnce(account);
    await bothShowTheFleet();

    // Values change in both accounts, one account's cycle at a time: after each one, both show it.
    for (let round = 1; round <= 3; round++) {
      for (const account of ACCOUNTS) {
        const sim = sims[account]!.sim;
        sim.fleet.apply([sim.fleet.boxes[round - 1]!], { kind: 'battery', level: 50 - round * 10 });
        await leader(account).runOnce(account);
        await bothShowTheFleet();
      }
    }

    // A box of the account replica-b leads changes: replica-a's API shows it after that account's next cycle.
    const ofB = ACCOUNTS.find((x) => b.replica!.holds(x))!;
    const box = sims[ofB]!.sim.fleet.boxes[2]!;
    sims[ofB]!.sim.fleet.apply([box], { kind: 'battery', level: 7 });
    expect((await shown(a)).api[`${ofB}/${box.serial}`]).toBe(20); // not polled yet
    await b.runOnce(ofB);
    expect((await shown(a)).api[`${ofB}/${box.serial}`]).toBe(7);
    await bothShowTheFleet();

    // A box of each account goes down: after each account's cycle, both replicas count its alert
    // (boxwatch_alerts_firing; the simulators' clocks, fixed, also fire each account's gateway_clock).
    const firing = async (app: App<PostgresStore>): Promise<[unknown, number][]> =>
      parsePromText(await (await fetch(`${app.httpUrl}/metrics`)).text()).samples.filter((x) => x.name === 'boxwatch_alerts_firing' && x.labels.rule === 'box-offline').map((x) => [x.labels.rule, x.value]);
    for (const [n, account] of ACCOUNTS.entries()) {
      const sim = sims[account]!.sim;
      sim.fleet.apply([sim.fleet.boxes[0]!], { kind: 'disconnect' });
      await leader(account).runOnce(account);
      for (const app of [a, b]) expect(await firing(app)).toEqual([['box-offline', n + 1]]);
    }
  }, 90_000);
});
