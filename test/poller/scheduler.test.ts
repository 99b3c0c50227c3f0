import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { startScheduler } from '../../src/poller/scheduler.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('scheduler', () => {
  it('skips and counts a tick that finds the previous cycle still running', async () => {
    const gate = deferred();
    let runs = 0;
    const scheduler = startScheduler({
      logger: silentLogger,
      task: async () => {
        runs += 1;
        await gate.promise;
      },
    });
    const first = scheduler.tick();
    expect(scheduler.running).toBe(true);
    expect(await scheduler.tick()).toBe('skipped');
    expect(await scheduler.tick()).toBe('skipped');
    gate.resolve();
    expect(await first).toBe('ran');
    expect(scheduler.skipped).toBe(2);
    expect(runs).toBe(1);
    expect(await scheduler.tick()).toBe('ran');
    expect(runs).toBe(2);
    await scheduler.stop();
  });

  it('survives a crashing cycle and keeps ticking', async () => {
    let runs = 0;
    const crashes: unknown[] = [];
    const scheduler = startScheduler({
      logger: silentLogger,
      onCrash: (err) => crashes.push(err),
      task: async () => {
        runs += 1;
        throw new Error('boom');
      },
    });
    expect(await scheduler.tick()).toBe('ran');
    expect(await scheduler.tick()).toBe('ran');
    expect(runs).toBe(2);
    expect(crashes.map((e) => (e as Error).message)).toEqual(['boom', 'boom']);
    await scheduler.stop();
  });

  it('stop waits for the cycle in flight and then refuses new ticks', async () => {
    const gate = deferred();
    let finished = false;
    const scheduler = startScheduler({
      logger: silentLogger,
      task: async () => {
        await gate.promise;
        finished = true;
      },
    });
    void scheduler.tick();
    const stopping = scheduler.stop();
    gate.resolve();
    await stopping;
    expect(finished).toBe(true);
    expect(await scheduler.tick()).toBe('skipped');
  });

  it('ticks on a real cron schedule', async () => {
    let runs = 0;
    const scheduler = startScheduler({ schedule: '* * * * * *', logger: silentLogger, task: async () => void (runs += 1) });
    await new Promise((r) => setTimeout(r, 2_200));
    await scheduler.stop();
    expect(runs).toBeGreaterThanOrEqual(1);
  });
});
