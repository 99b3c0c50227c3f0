/**
 * `boxwatch test-call run` (in-process runCli) against the simulator over real HTTP, on a real
 * SQLite file: one line saying what it did, the daily caps (per box and per entry) counted in the
 * database, a disconnected box refused without a call, bad arguments and bad configuration
 * (exit 2). The simulator's call book counts the calls that were really placed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { registerTestCall } from '../../src/cli/test-call.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { runCommand, type CliRun } from '../helpers/cli.js';
import { FakeClock } from '../helpers/fake-clock.js';

const KEY = 'test-call-cli-key-5d21';
const PHONE = '+14155550123';
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ port: 0, key: KEY, devices: 6, seed: 3, clock: new FakeClock(Date.now()), historyCalls: 0 });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-test-call-'));
});
afterAll(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function config(name: string, testCalls: string): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }
storage: { path: "${join(dir, `${name}.db`)}" }
calls: {}
${testCalls}`,
  );
  return path;
}

const ENTRY = `test_calls:
  - { name: cli-check, boxes: [BX-00001, BX-00002, BX-00003, BX-00004], to: "${PHONE}", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 1, total: 2 } }
`;

async function run(argv: string[]): Promise<CliRun> {
  const r = await runCommand(argv, { BOXWATCH_SECRET_KEY: KEY }, [registerTestCall]);
  expect(r.out + r.err).not.toContain(KEY);
  expect(r.out + r.err).not.toContain(PHONE);
  return r;
}

function placed(serial: string): number {
  return sim.sim.calls.page(1000, 1).items.filter((c) => c.to === PHONE && c.from === `box:${serial}`).length;
}

describe('boxwatch test-call run', () => {
  it('places one test call now, within the caps, and only from a connected box', async () => {
    const path = config('caps', ENTRY);
    const first = await run(['test-call', 'run', '--box', 'BX-00001', '--config', path]);
    expect(first).toMatchObject({ code: 0, err: '' });
    expect(first.out).toMatch(/^test call \d+ placed from BX-00001 to \+1415•••0123 \(agent 101, entry cli-check; today 1 of 1 from this box, 1 of 2 in all\)\n$/);
    expect(placed('BX-00001')).toBe(1);

    // the box's cap is reached: refused, with the reason, and no call
    const again = await run(['test-call', 'run', '--box', 'box:BX-00001', '--config', path]);
    expect(again.code).toBe(1);
    expect(again.err).toBe('error [cap_reached]: test call from BX-00001 not placed: daily cap reached: 1 of 1 test calls from this box today (UTC)\n');
    expect(placed('BX-00001')).toBe(1);

    // a disconnected box: refused, and it spends nothing of the cap
    sim.sim.fleet.apply(sim.sim.fleet.match('BX-00002'), { kind: 'disconnect' });
    const down = await run(['test-call', 'run', '--box', 'BX-00002', '--config', path]);
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/^error \[box_disconnected\]: test call from BX-00002 not placed: box BX-00002 \(".*"\) is disconnected \(last seen .*\)\n$/);
    expect(placed('BX-00002')).toBe(0);

    const third = await run(['test-call', 'run', '--box', 'BX-00003', '--config', path]);
    expect(third.code).toBe(0);
    expect(third.out).toMatch(/today 1 of 1 from this box, 2 of 2 in all\)\n$/);

    // the entry's cap is reached
    const fourth = await run(['test-call', 'run', '--box', 'BX-00004', '--config', path]);
    expect(fourth.code).toBe(1);
    expect(fourth.err).toContain('daily cap reached: 2 of 2 test calls of cli-check today (UTC)');
    expect(placed('BX-00004')).toBe(0);
    expect(['BX-00001', 'BX-00002', 'BX-00003', 'BX-00004'].map(placed)).toEqual([1, 0, 1, 0]);
  });

  it('without --box, uses a box the last poll saw connected; with none known, says so', async () => {
    const r = await run(['test-call', 'run', '--config', config('no-poll', ENTRY)]);
    expect(r.code).toBe(1);
    expect(r.err).toBe('error [no_box]: no box selected by test call cli-check (boxes: BX-00001, BX-00002, BX-00003, BX-00004) was connected at the last poll\n');
  });

  it('a bad argument or configuration is one line and exit 2, and places nothing', async () => {
    const before = sim.sim.calls.size;
    const path = config('args', ENTRY);
    const cases: [string[], RegExp][] = [
      [['test-call', 'run', '--box', 'no such box!', '--config', path], /^error: --box must be a box serial/],
      [['test-call', 'run', '--box', 'BX-00005', '--config', path], /^error: box BX-00005 is not selected by test call cli-check/],
      [['test-call', 'run', '--entry', 'nope', '--config', path], /^error: --entry "nope" is not a test_calls entry \(cli-check\)/],
      [['test-call', 'run', '--config', config('none', '')], /^error: the configuration has no test_calls: entries/],
      [['test-call', 'run', '--config', config('bad-to', ENTRY.replace(PHONE, '555-0123'))], /test_calls\[0\]\.to: must be an E\.164 phone number/],
      [['test-call', 'run', '--config', config('bad-cap', ENTRY.replace('per_box: 1, ', ''))], /test_calls\[0\]\.daily_cap\.per_box/],
      [['test-call', 'run', '--config', config('bad-schedule', ENTRY.replace('0 0 9 * * *', 'every day'))], /test_calls\[0\]\.schedule: invalid cron expression/],
    ];
    for (const [argv, message] of cases) {
      const r = await runCommand(argv, { BOXWATCH_SECRET_KEY: KEY }, [registerTestCall]);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err, argv.join(' ')).toMatch(message);
    }
    expect(sim.sim.calls.size).toBe(before);
  });

  it('test calls need a calls: section', async () => {
    const path = join(dir, 'no-calls.yaml');
    writeFileSync(path, `gateway: { base_url: "${sim.url}", secret_key: x }\nstorage: { path: "${join(dir, 'x.db')}" }\n${ENTRY}`);
    const r = await runCommand(['test-call', 'run', '--config', path], {}, [registerTestCall]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/test_calls: test calls need a calls: section/);
  });

  it('with gateways: the box is ACCOUNT/SERIAL, or a serial one account has; the call goes through that account with its own key', async () => {
    const multi = await startSimulator({ port: 0, key: 'MULTI-KEY', devices: 2, seed: 4, clock: new FakeClock(Date.now()), historyCalls: 0, accounts: 2, sharedSerials: true });
    try {
      for (const a of multi.accounts) a.sim.fleet.apply(a.sim.fleet.boxes, { kind: 'connect' });
      const env = { ACME_KEY: 'MULTI-KEY-1', GLOBEX_KEY: 'MULTI-KEY-2' };
      const path = join(dir, 'accounts.yaml');
      const text = `gateways:
  - { name: acme, base_url: "${multi.url}", secret_key: "\${ACME_KEY}" }
  - { name: globex, base_url: "${multi.url}", secret_key: "\${GLOBEX_KEY}" }
storage: { path: "${join(dir, 'accounts.db')}" }
calls: {}
${ENTRY.replace('boxes: [BX-00001, BX-00002, BX-00003, BX-00004]', 'boxes: "*"')}`;
      writeFileSync(path, text);
      // The fleet as the daemon stored it: BX-00001 and BX-00002 in both accounts.
      const app = createApp({ config: parseConfig(text, env), logger: silentLogger });
      await app.runOnce();
      await app.stop();
      const book = (i: number, serial: string): number => (multi.accounts[i] as RunningSimulator['accounts'][number]).sim.calls.page(1000, 1).items.filter((c) => c.to === PHONE && c.from === `box:${serial}`).length;

      const ok = await runCommand(['test-call', 'run', '--box', 'globex/BX-00002', '--config', path], env, [registerTestCall]);
      expect(ok).toMatchObject({ code: 0, err: '' });
      expect(ok.out).toMatch(/^test call globex\/\d+ placed from globex\/BX-00002 to \+1415•••0123 /);
      expect([book(0, 'BX-00002'), book(1, 'BX-00002')]).toEqual([0, 1]);

      const ambiguous = await runCommand(['test-call', 'run', '--box', 'BX-00001', '--config', path], env, [registerTestCall]);
      expect(ambiguous.code).toBe(2);
      expect(ambiguous.err).toContain('serial BX-00001 is in several accounts: acme/BX-00001, globex/BX-00001 (write ACCOUNT/SERIAL)');
      expect([book(0, 'BX-00001'), book(1, 'BX-00001')]).toEqual([0, 0]);
      for (const r of [ok, ambiguous]) expect(r.out + r.err).not.toContain('MULTI-KEY');
    } finally {
      await multi.close();
    }
  });
});
