import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import type { CliContext } from '../../src/cli/context.js';
import { registerSim } from '../../src/cli/sim.js';
import { MESSAGES } from '../../src/gateway/messages.js';
import { DEV_KEY } from '../../src/sim/simulator.js';

interface Run {
  out: string[];
  err: string[];
  /** Resolves with the first line printed on stdout. */
  firstLine: Promise<string>;
  stop(): void;
  exit: Promise<number>;
}

function runSim(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const controller = new AbortController();
  const out: string[] = [];
  const err: string[] = [];
  let gotLine: (line: string) => void = () => {};
  const firstLine = new Promise<string>((resolve) => {
    gotLine = resolve;
  });
  const ctx: CliContext = {
    out: (s) => {
      out.push(s);
      gotLine(s);
    },
    err: (s) => err.push(s),
    env,
    signal: controller.signal,
    isTTY: false,
  };
  const exit = runCli(['sim', ...args], ctx, [registerSim]);
  void exit.then(() => gotLine(''));
  return { out, err, firstLine, stop: () => controller.abort(), exit };
}

async function deviceList(url: string, key: string): Promise<Response> {
  return fetch(`${url}/api/gateway/v1/box/device-list`, { headers: { 'account-secret-key': key }, signal: AbortSignal.timeout(10_000) });
}

describe('boxwatch sim', () => {
  it('prints exactly one line with the chosen port, serves, and stops on the signal', async () => {
    const run = runSim(['--port', '0', '--devices', '12', '--seed', '3', '--key', 'cli-key']);
    const line = await run.firstLine;
    expect(line).toMatch(/^gateway simulator listening on http:\/\/127\.0\.0\.1:(\d+)\n$/);
    const url = line.trim().replace('gateway simulator listening on ', '');
    expect(url).not.toMatch(/:0$/);

    const ok = await deviceList(url, 'cli-key');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: unknown[] }).data).toHaveLength(12);
    const denied = await deviceList(url, DEV_KEY);
    expect(await denied.json()).toEqual({ status: 'error', message: MESSAGES.unauthorized });

    run.stop();
    expect(await run.exit).toBe(0);
    expect(run.out).toEqual([line]);
    expect(run.err).toEqual([]);
    await expect(deviceList(url, 'cli-key')).rejects.toThrow();
  });

  it('takes the key from BOXWATCH_SECRET_KEY and never prints it', async () => {
    const run = runSim(['--port', '0', '--devices', '2'], { BOXWATCH_SECRET_KEY: 'env-secret-123' });
    const url = (await run.firstLine).trim().split(' ').at(-1) ?? '';
    expect((await deviceList(url, 'env-secret-123')).status).toBe(200);
    expect((await deviceList(url, DEV_KEY)).status).toBe(401);
    run.stop();
    await run.exit;
    expect([...run.out, ...run.err].join('')).not.toContain('env-secret-123');
  });

  it('falls back to the documented development key', async () => {
    const run = runSim(['--port', '0', '--devices', '2']);
    const url = (await run.firstLine).trim().split(' ').at(-1) ?? '';
    expect((await deviceList(url, DEV_KEY)).status).toBe(200);
    run.stop();
    await run.exit;
    expect(run.out.join('')).not.toContain(DEV_KEY);
  });

  it('loads a scenario and lets flags override its settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-sim-'));
    const file = join(dir, 'scenario.yaml');
    writeFileSync(file, 'devices: 7\nspeed: 60\ntimeline:\n  - from: 0s\n    endpoints: [call_list]\n    status: 503\n');
    const run = runSim(['--port', '0', '--scenario', file, '--devices', '4', '--key', 'k']);
    const url = (await run.firstLine).trim().split(' ').at(-1) ?? '';
    expect(((await (await deviceList(url, 'k')).json()) as { data: unknown[] }).data).toHaveLength(4);
    expect((await fetch(`${url}/api/gateway/v1/call/list`, { headers: { 'account-secret-key': 'k' } })).status).toBe(503);
    run.stop();
    expect(await run.exit).toBe(0);
  });

  it('--accounts serves one fleet per account key (KEY-1 ... KEY-N), a scenario per account, and never prints a key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-sim-'));
    const file = join(dir, 'second.yaml');
    writeFileSync(file, 'timeline:\n  - from: 0s\n    endpoints: [call_list]\n    status: 503\n');
    const run = runSim(['--port', '0', '--accounts', '3', '--devices', '2', '--key', 'k', '--account-scenario', `2=${file}`]);
    const url = (await run.firstLine).trim().split(' ').at(-1) ?? '';
    const serials = async (key: string) => ((await (await deviceList(url, key)).json()) as { data: { serial_no: string }[] }).data.map((d) => d.serial_no);
    expect(await serials('k-1')).toEqual(['BX01-00001', 'BX01-00002']);
    expect(await serials('k-3')).toEqual(['BX03-00001', 'BX03-00002']);
    expect((await deviceList(url, 'k')).status).toBe(401);
    const calls = (key: string) => fetch(`${url}/api/gateway/v1/call/list`, { headers: { 'account-secret-key': key } });
    expect((await calls('k-2')).status).toBe(503);
    expect((await calls('k-1')).status).toBe(200);
    run.stop();
    expect(await run.exit).toBe(0);
    expect(run.out).toHaveLength(1);
    expect([...run.out, ...run.err].join('')).not.toMatch(/k-\d/);
  });

  it('--shared-serials gives every account the same BX- serials', async () => {
    const run = runSim(['--port', '0', '--accounts', '2', '--devices', '2', '--key', 'k', '--shared-serials']);
    const url = (await run.firstLine).trim().split(' ').at(-1) ?? '';
    for (const key of ['k-1', 'k-2']) {
      expect(((await (await deviceList(url, key)).json()) as { data: { serial_no: string }[] }).data.map((d) => d.serial_no)).toEqual(['BX-00001', 'BX-00002']);
    }
    run.stop();
    expect(await run.exit).toBe(0);
  });

  it.each([
    [['--port', 'http'], /--port must be an integer/],
    [['--port', '70000'], /--port must be between 0 and 65535/],
    [['--devices', '-1'], /--devices must be between 0 and 100000/],
    [['--devices', 'many'], /--devices must be an integer/],
    [['--seed', '1.5'], /--seed must be an integer/],
    [['--speed', '0'], /--speed must be a number above 0/],
    [['--speed', 'fast'], /--speed must be a number above 0/],
    [['--key', ''], /--key must not be empty/],
    [['--scenario', '/nonexistent/file.yaml'], /scenario \/nonexistent\/file.yaml is invalid:\n {2}\(file\): file not found/],
    [['--bogus'], /unknown option '--bogus'/],
    [['--accounts', '0'], /--accounts must be between 1 and 100/],
    [['--accounts', '2', '--account-scenario', '3=x.yaml'], /--account-scenario must be between 1 and 2, got 3/],
    [['--accounts', '2', '--account-scenario', 'x.yaml'], /--account-scenario must be N=FILE/],
  ])('refuses %j with a clear message and exit code 2', async (args, message) => {
    const run = runSim(['--port', '0', ...args]);
    expect(await run.exit).toBe(2);
    expect(run.out).toEqual([]);
    expect(run.err.join('')).toMatch(message);
  });

  it('refuses an invalid scenario with the path of each problem, exit code 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-sim-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'timeline:\n  - at: 1m\n    box: NOPE-1\n    disconnect: true\n  - at: later\n    box: BX-00001\n    battery: 5\n');
    const run = runSim(['--port', '0', '--scenario', file]);
    expect(await run.exit).toBe(2);
    expect(run.err.join('')).toMatch(/timeline\[1\]\.at: expected a duration/);

    writeFileSync(file, 'timeline:\n  - at: 1m\n    box: NOPE-1\n    disconnect: true\n');
    const second = runSim(['--port', '0', '--scenario', file, '--devices', '3']);
    expect(await second.exit).toBe(2);
    expect(second.err.join('')).toMatch(/timeline\[0\]\.box: matches no box \(serials are BX-00001 to BX-00003\)/);
  });

  it('says so when the port is taken (exit code 1)', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = runSim(['--port', String(port)]);
      expect(await run.exit).toBe(1);
      expect(run.err.join('')).toContain(`cannot listen on 127.0.0.1:${port} (EADDRINUSE)`);
    } finally {
      blocker.close();
    }
  });
});
