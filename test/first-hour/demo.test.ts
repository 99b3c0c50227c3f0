/**
 * `boxwatch demo` from the outside: it speaks one clock (simulated time, in its messages and in
 * the database it leaves), the read commands measure that database on its own clock and say so,
 * and a second demo keeps the first one's database (or replaces it with --fresh) and says where.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/duration.js';
import { ensureBuilt, MAIN } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { until } from '../helpers/wait.js';

let dir: string;
let first: { code: number; out: string; err: string };
let started: number;
let ended: number;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-demo-'));
  started = Date.now();
  first = await runBuilt(['demo', '--duration', '8s'], { cwd: dir, timeoutMs: 40_000 });
  ended = Date.now();
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Simulated time of each alert block's header line. */
const headerTimes = (out: string): number[] =>
  [...out.matchAll(/^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC (FIRING|RESOLVED) \d+/gm)].map((m) => Date.parse(`${m[1] as string}Z`));

describe('boxwatch demo', () => {
  it('runs, prints alert blocks and the final status, and says where the database is', () => {
    expect(first.code).toBe(0);
    expect(first.out).toContain('Every time below is simulated time.');
    expect(first.out).toContain('Database: ./data/demo.db. Stopping after 8s.');
    expect(first.out).toMatch(/^ {2}FIRING {4}BX-\d{5} /m);
    expect(first.out).toContain('Fleet status at the end of the demo');
    expect(existsSync(join(dir, 'data/demo.db'))).toBe(true);
  });

  it('its times are simulated time, running ahead of the wall clock at 60x', () => {
    const times = headerTimes(first.out);
    expect(times.length).toBeGreaterThan(0);
    // Printed before the run ended, yet stamped after it ended: the alert times (and the durations
    // measured from them) come from a clock running ahead of the wall clock, the simulated one. A
    // loaded machine only makes the run longer and its alerts fewer, so no fixed margin is asked.
    expect(Math.max(...times)).toBeGreaterThan(ended);
  });

  it('uptime over the demo database is measured in simulated time, and says so', async () => {
    const r = await runBuilt(['uptime', '--db', 'data/demo.db', '--since', '2h'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^note: a demo database, on simulated time \(its last poll is \d+m(\d+s)? ahead of this machine's clock\); times are measured from that poll\n$/);
    const observed = /^BX-00001 .*\s(\S+)$/m.exec(r.out)?.[1] ?? '';
    // Simulated time: each cycle of the 8 real seconds covers a simulated minute (60x), however
    // few cycles a loaded machine ran; measured on the real clock it could not exceed the run itself.
    expect(parseDuration(observed)).toBeGreaterThanOrEqual(60_000);
    expect(parseDuration(observed)).toBeGreaterThan(ended - started);
  });

  it('a second demo keeps the first database and says where; --fresh replaces it', async () => {
    const second = await runBuilt(['demo', '--duration', '2s'], { cwd: dir, timeoutMs: 40_000 });
    expect(second.code).toBe(0);
    const kept = /\(the previous demo's is kept as (data\/demo-\d{8}-\d{6}\.db)\)/.exec(second.out)?.[1];
    expect(kept).toBeDefined();
    expect(existsSync(join(dir, kept as string))).toBe(true);
    const status = await runBuilt(['status', '--db', kept as string], { cwd: dir });
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/^BX-00003 /m);

    const fresh = await runBuilt(['demo', '--duration', '2s', '--fresh'], { cwd: dir, timeoutMs: 40_000 });
    expect(fresh.code).toBe(0);
    expect(fresh.out).toContain('Database: ./data/demo.db. Stopping after 2s.');
    expect(readdirSync(join(dir, 'data')).filter((f) => /^demo-.*\.db$/.test(f))).toEqual([(kept as string).slice('data/'.length)]);
  });
});

describe('boxwatch demo, while it runs', () => {
  it('its /healthz is healthy on the simulated clock (a cycle 2 real seconds ago is 2 simulated minutes old)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'boxwatch-demo-health-'));
    const child = spawn(process.execPath, [MAIN, 'demo', '--duration', '30s'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          const m = /^Dashboard: (http:\/\/\S+?)\/? /.exec(line);
          if (m) resolve(m[1] as string);
        });
        child.once('exit', (code) => reject(new Error(`demo exited early (${code})`)));
      });
      const health = async (): Promise<number> => (await fetch(`${url}/healthz`).catch(() => null))?.status ?? 0;
      await expect.poll(health, { timeout: 15_000 }).toBe(200); // the first cycle is done
      // Asked all through three more cycles (their gaps are minutes of simulated time), it stays healthy.
      const statuses: number[] = [];
      const cycles = new Set<string>();
      await until(
        'three more cycles',
        async () => {
          const res = await fetch(`${url}/healthz`).catch(() => null);
          statuses.push(res?.status ?? 0);
          const body = res === null ? {} : ((await res.json()) as { lastCycle?: { startedAt?: string } });
          if (body.lastCycle?.startedAt !== undefined) cycles.add(body.lastCycle.startedAt);
          return cycles.size >= 4;
        },
        { timeoutMs: 30_000, everyMs: 200 },
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
