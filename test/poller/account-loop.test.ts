/**
 * The account loop on its own: a fake gateway (an empty account, or one that fails), an in-memory
 * store, the real alert pipeline, observers that record what they saw.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AlertPipeline } from '../../src/alerts/pipeline.js';
import { defaultConfig } from '../../src/config/index.js';
import type { GatewayClient } from '../../src/gateway/types.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createAccountLoop, type AccountLoopOptions, type CommittedPart, type CycleObserver, type FleetView } from '../../src/poller/account-loop.js';
import { createAccountRuns } from '../../src/poller/accounts.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';

const emptyAccount = { listDevices: async () => ({ devices: [], rejected: [], serverTime: null }), close: async () => {} } as unknown as GatewayClient;

const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function loopWith(o: { observers: CycleObserver[]; commitFails?: boolean; led?: boolean; notLed?: () => Promise<void>; fleet?: AccountLoopOptions['fleet'] }) {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const config = defaultConfig('key');
  const store = openStore(':memory:', { clock });
  stores.push(store);
  const metrics = createMetrics({ clock });
  const failing = Object.create(store) as SqliteStore;
  failing.commitCycle = () => {
    throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  };
  const options: AccountLoopOptions = {
    accounts: createAccountRuns({ gateways: config.gateways, timezone: 'UTC', client: emptyAccount, clock, logger: silentLogger, onRequest: () => {} }),
    store: o.commitFails === true ? failing : store,
    pipeline: new AlertPipeline({ config }),
    detailsEveryMs: config.poll.detailsEvery,
    timezone: 'UTC',
    clock,
    scheduleClock: clock,
    logger: silentLogger,
    metrics,
    leadership: { claim: () => (o.led === false ? null : { fence: undefined }), lost: () => {} },
    notLed: o.notLed ?? (async () => {}),
    fleet: o.fleet ?? { publish: () => {}, view: async (): Promise<FleetView> => ({ boxes: [], states: new Map(), version: 1 }) },
    observers: o.observers,
    signal: new AbortController().signal,
  };
  return { loop: createAccountLoop(options), metrics };
}

describe('the account loop', () => {
  it('runs the observers in order after a stored cycle, each after the one before has finished', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const slow: CycleObserver = async () => {
      seen.push('first starts');
      await new Promise<void>((resolve) => (release = resolve));
      seen.push('first ends');
    };
    const { loop } = loopWith({ observers: [slow, (s) => void seen.push(`second: ${s.cycle.cycle.outcome}, ${s.committed.accounts.join()}`)] });
    const cycle = loop.runOnce();
    await expect.poll(() => seen).toEqual(['first starts']);
    release();
    const result = await cycle;
    expect(result?.cycle.outcome).toBe('ok');
    expect(seen).toEqual(['first starts', 'first ends', 'second: ok, default']);
  });

  it('reads the fleet view once per cycle however many observers ask', async () => {
    let reads = 0;
    const views: FleetView[] = [];
    const view = async (): Promise<FleetView> => ({ boxes: [], states: new Map(), version: (reads += 1) });
    const { loop } = loopWith({ fleet: { publish: () => {}, view }, observers: [async (s) => void views.push(await s.view()), async (s) => void views.push(await s.view())] });
    await loop.runOnce();
    await loop.runOnce();
    expect(reads).toBe(2);
    expect(views.map((v) => v.version)).toEqual([1, 1, 2, 2]);
  });

  it('publishes the cycle\'s part of the fleet before the first observer, which sees this cycle in the view', async () => {
    const published: CommittedPart[] = [];
    const fleet: AccountLoopOptions['fleet'] = {
      publish: (c) => void published.push(c),
      view: async () => ({ boxes: published.flatMap((c) => c.boxes), states: new Map(), version: published.length }),
    };
    const versions: number[] = [];
    const { loop } = loopWith({ fleet, observers: [async (s) => void versions.push((await s.view()).version)] });
    await loop.runOnce();
    await loop.runOnce();
    expect(published.map((c) => c.accounts)).toEqual([['default'], ['default']]);
    expect(versions).toEqual([1, 2]);
  });

  it('runs no observer after a cycle whose transaction failed, and counts it as a failed cycle', async () => {
    const seen: string[] = [];
    const { loop, metrics } = loopWith({ commitFails: true, observers: [() => void seen.push('observer')] });
    expect(await loop.runOnce()).toBeUndefined();
    expect(seen).toEqual([]);
    expect(await metrics.text()).toMatch(/boxwatch_poll_cycles_total\{[^}]*outcome="failed"[^}]*\} 1/);
  });

  it('an account another replica leads: no cycle and no observer, the not-led hook instead', async () => {
    const seen: string[] = [];
    const { loop } = loopWith({ led: false, observers: [() => void seen.push('observer')], notLed: async () => void seen.push('not led') });
    expect(await loop.runOnce()).toBeUndefined();
    expect(seen).toEqual(['not led']);
  });
});
