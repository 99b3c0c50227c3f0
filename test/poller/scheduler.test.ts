import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { scheduleIntervalMs, startScheduler } from '../../src/poller/scheduler.js';
import { FakeClock } from '../helpers/fake-clock.js';

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
      clock: new FakeClock(),
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
      clock: new FakeClock(),
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
      clock: new FakeClock(),
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

  it('ticks at each time of its cron schedule as its clock reaches it, and not after stop', async () => {
    const clock = new FakeClock('2026-01-01T00:00:00.500Z');
    let runs = 0;
    const scheduler = startScheduler({ schedule: '* * * * * *', logger: silentLogger, clock, task: async () => void (runs += 1) });
    expect(scheduler.nextRun()).toBe(Date.parse('2026-01-01T00:00:01Z'));
    clock.advance(400);
    expect(runs).toBe(0);
    clock.advance(100);
    await vi.waitFor(() => expect(runs).toBe(1));
    expect(scheduler.nextRun()).toBe(Date.parse('2026-01-01T00:00:02Z'));
    clock.advance(1_000);
    await vi.waitFor(() => expect(runs).toBe(2));
    await scheduler.stop();
    clock.advance(5_000);
    await Promise.resolve();
    expect(runs).toBe(2);
  });
});

describe('the time zone of the schedule (poll.timezone)', () => {
  const hostTz = process.env.TZ;
  afterEach(() => {
    if (hostTz === undefined) delete process.env.TZ;
    else process.env.TZ = hostTz;
  });

  /** The next run of "every day at 09:00" as an ISO time (UTC). */
  function nextNine(timezone: string | undefined): string {
    const scheduler = startScheduler({ schedule: '0 0 9 * * *', ...(timezone !== undefined && { timezone }), logger: silentLogger, clock: new FakeClock(), task: async () => undefined });
    try {
      return new Date(scheduler.nextRun() as number).toISOString();
    } finally {
      void scheduler.stop();
    }
  }

  it('is UTC by default, whatever the host time zone (here Asia/Tokyo)', () => {
    process.env.TZ = 'Asia/Tokyo';
    const timezone = parseConfig('gateway: { secret_key: k }\n', {}, 'test').poll.timezone;
    expect(timezone).toBe('UTC');
    expect(nextNine(timezone)).toMatch(/T09:00:00\.000Z$/);
    expect(nextNine(undefined)).toMatch(/T09:00:00\.000Z$/);
  });

  it('follows the configured zone: 09:00 in Tokyo is 00:00 UTC', () => {
    process.env.TZ = 'Europe/Paris';
    expect(nextNine('Asia/Tokyo')).toMatch(/T00:00:00\.000Z$/);
  });

  it('reads UTC without Intl (whose ICU data would cost the daemon about 8 MiB)', () => {
    const dateTimeFormat = vi.spyOn(Intl, 'DateTimeFormat');
    try {
      expect(nextNine('UTC')).toMatch(/T09:00:00\.000Z$/);
      expect(scheduleIntervalMs('*/30 * * * * *')).toBe(30_000);
      expect(dateTimeFormat).not.toHaveBeenCalled();
    } finally {
      dateTimeFormat.mockRestore();
    }
  });

  it('an unknown time zone is a configuration error naming poll.timezone', () => {
    expect(() => parseConfig('gateway: { secret_key: k }\npoll: { timezone: Mars/Olympus }\n', {}, 'test')).toThrow(/poll\.timezone: unknown time zone/);
  });
});

describe('the expression', () => {
  it('has 5 fields (minutes first) or 6 (seconds first)', () => {
    expect(scheduleIntervalMs('*/5 * * * *')).toBe(300_000);
    expect(scheduleIntervalMs('*/5 * * * * *')).toBe(5_000);
  });

  it('names months and days short or in full', () => {
    const next = (schedule: string): number | null => {
      const scheduler = startScheduler({ schedule, logger: silentLogger, clock: new FakeClock(), task: async () => undefined });
      try {
        return scheduler.nextRun();
      } finally {
        void scheduler.stop();
      }
    };
    expect(next('0 0 9 * january monday')).toBe(next('0 0 9 * 1 1'));
    expect(next('0 0 9 * Jan MON')).toBe(next('0 0 9 * 1 1'));
  });

  it('needs both the day of month and the day of week when both are given: Friday the 13th', () => {
    const scheduler = startScheduler({ schedule: '0 0 0 13 * fri', logger: silentLogger, clock: new FakeClock(), task: async () => undefined });
    try {
      const next = new Date(scheduler.nextRun() as number);
      expect([next.getUTCDate(), next.getUTCDay(), next.getUTCHours()]).toEqual([13, 5, 0]);
    } finally {
      void scheduler.stop();
    }
  });
});

describe('a missed run', () => {
  it('is told through the log with its time, nothing raw on stdout', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const stdout: string[] = [];
    const realWrite = process.stdout.write.bind(process.stdout);
    const realWarn = console.warn;
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      stdout.push(String(chunk));
      return realWrite(chunk, ...rest);
    }) as typeof process.stdout.write;
    console.warn = (...args: unknown[]) => stdout.push(args.map(String).join(' '));
    const clock = new FakeClock('2026-01-01T00:00:00.100Z');
    let runs = 0;
    const scheduler = startScheduler({ schedule: '* * * * * *', logger: createLogger({ destination }), clock, task: async () => void (runs += 1) });
    try {
      // The process wakes 3.5 s later (suspended, or its event loop blocked): the runs of :01 and
      // :02 are missed; :03 is under a second late and still runs.
      clock.advance(3_500);
      await vi.waitFor(() => expect(runs).toBe(1));
    } finally {
      await scheduler.stop();
      process.stdout.write = realWrite;
      console.warn = realWarn;
    }
    const missed = lines.map((l) => JSON.parse(l) as { level: number; msg: string; at?: string; last?: string; missed?: number }).filter((l) => /missed/.test(l.msg));
    expect(missed.length).toBeGreaterThan(0);
    expect(missed[0]).toMatchObject({ level: 40, msg: expect.stringContaining('a scheduled run was missed') as string, at: expect.stringMatching(/Z$/) as string });
    // The runs the suspension passed are told in one line, from the first to the last.
    expect(missed).toHaveLength(1);
    expect(missed[0]).toMatchObject({ at: '2026-01-01T00:00:01.000Z', last: '2026-01-01T00:00:02.000Z', missed: 2 });
    expect(stdout.join('')).not.toMatch(/missed execution/);
  });
});
