/**
 * The daily cap of test calls across kill -9, restart and SIGHUP, with the real process
 * (`node dist/src/main.js run`) against the simulator over real HTTP (real clock): the first
 * make-call hangs in the simulator and the daemon is killed with SIGKILL while it is in flight,
 * after its slot was reserved in the database. After each restart and a reload the daemon keeps
 * ticking every second: the simulator never receives more test calls than the caps allow, and the
 * slot of the killed call stays used (boxwatch errs on the side of fewer calls).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { ensureBuilt } from '../e2e/build.js';

const KEY = 'test-call-kill-key-77c1';
const PHONE = '+14155550123';

let sim: RunningSimulator;
let dir: string;
const daemons = new DaemonProcesses({ BOXWATCH_SECRET_KEY: KEY });

beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: KEY, devices: 4, seed: 21, historyCalls: 0 }); // real clock, speed 1
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-test-call-kill-'));
}, 120_000);

afterAll(async () => {
  daemons.killAll();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Test calls the simulator received (make-call to the test number), all or from one box. */
function received(serial?: string): number {
  return sim.sim.calls.page(10_000, 1).items.filter((c) => c.to === PHONE && (serial === undefined || c.from === `box:${serial}`)).length;
}

/** Rows of test_calls in `state`, read from the daemon's database (0 before it exists). */
function rows(dbPath: string, state: string): number {
  try {
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(`SELECT count(*) FROM test_calls WHERE state = ?`).pluck().get(state) as number;
    } finally {
      db.close();
    }
  } catch {
    return 0; // not created yet
  }
}

/** Log lines of the daemons saying a test call was skipped because a cap was reached. */
function capSkips(): number {
  return daemons.output.join('').split('\n').filter((l) => l.includes('test call skipped') && l.includes('daily cap reached')).length;
}

describe('test calls: the daily cap across kill -9', () => {
  it('holds across a kill -9 after a slot was reserved, a restart, a reload and another kill -9', async () => {
    const dbPath = join(dir, 'boxwatch.db');
    const config = join(dir, 'boxwatch.yaml');
    writeFileSync(
      config,
      `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 20s }
poll: { schedule: "* * * * * *" }
calls: { schedule: "*/2 * * * * *" }
storage: { path: "${dbPath}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
test_calls:
  - { name: every-second, boxes: [BX-00001, BX-00002], to: "${PHONE}", agent: 101, schedule: "* * * * * *", daily_cap: { per_box: 2, total: 3 } }
notifiers: []
http: false
log: { level: info, format: json }
`,
    );
    // 1. The first make-call hangs in the simulator; the other box's call is placed. The daemon is
    //    killed while the first is in flight, its slot reserved.
    sim.sim.inject({ endpoints: ['make_call'], hang: true, count: 1 });
    let daemon = daemons.spawn(config);
    await daemons.until('one call placed, one reserved with make-call in flight', () => rows(dbPath, 'reserved') === 1 && rows(dbPath, 'placed') === 1, 15_000);
    daemon.kill('SIGKILL');
    expect(await daemons.exited(daemon)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(received()).toBe(1);

    // 2. Restart: the daemon places what is left of the caps (one call: the reserved slot counts),
    //    then skips on every tick.
    daemon = daemons.spawn(config);
    await daemons.until('both caps reached after the restart', () => received() === 2 && capSkips() >= 4, 20_000);

    // 3. A reload (SIGHUP) and more ticks.
    const before = capSkips();
    daemon.kill('SIGHUP');
    await daemons.until('ticks after the reload', () => daemons.output.join('').includes('configuration reloaded') && capSkips() >= before + 4, 20_000);

    // 4. kill -9 again, restart, more ticks.
    daemon.kill('SIGKILL');
    await daemons.exited(daemon);
    const beforeRestart = capSkips();
    daemon = daemons.spawn(config);
    await daemons.until('ticks after the second restart', () => capSkips() >= beforeRestart + 4, 20_000);
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon)).toEqual({ code: 0, signal: null });

    // Three slots of the total cap of 3 were used: two calls placed, and the killed one, which
    // keeps counting although the simulator never placed it. No box got more than its own cap.
    expect(received()).toBe(2);
    expect(rows(dbPath, 'placed')).toBe(2);
    expect(rows(dbPath, 'reserved')).toBe(1);
    expect(received('BX-00001')).toBeLessThanOrEqual(2);
    expect(received('BX-00002')).toBeLessThanOrEqual(2);
  }, 90_000);
});
