/**
 * SIGHUP on the real executable (dist/src/main.js): `boxwatch run` reloads its configuration and
 * keeps running; other commands keep the default meaning of a hangup (they end).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { MAIN, ROOT, ensureBuilt } from '../e2e/build.js';
import { waitFor } from './helpers.js';

const KEY = 'ops-sighup-key';
let dir: string;
let sim: RunningSimulator;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-sighup-'));
  sim = await startSimulator({ port: 0, key: KEY, devices: 3 });
}, 120_000);

afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

function spawnBoxwatch(args: string[]): { child: ChildProcess; output: () => string; exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: { ...process.env, BOXWATCH_SECRET_KEY: KEY }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const chunks: string[] = [];
  child.stdout?.on('data', (c: Buffer) => chunks.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => chunks.push(c.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, output: () => chunks.join(''), exit };
}

const messages = (output: string): string[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

function writeConfig(path: string, schedule: string): void {
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }\npoll: { schedule: "${schedule}" }\nstorage: { path: "${join(dir, 'boxwatch.db')}" }\nhttp: false\nlog: { level: info, format: json }\n`,
  );
}

describe('SIGHUP', () => {
  it('boxwatch run reloads a valid file, rejects an invalid one, and still stops cleanly on SIGTERM', async () => {
    const path = join(dir, 'boxwatch.yaml');
    writeConfig(path, '* * * * * *');
    const run = spawnBoxwatch(['run', '--config', path]);
    await waitFor('the daemon to poll', () => messages(run.output()).includes('boxwatch polling'), 20_000);

    writeConfig(path, '*/2 * * * * *');
    run.child.kill('SIGHUP');
    await waitFor('the reload', () => messages(run.output()).includes('configuration reloaded'));
    expect(run.output()).toContain('"schedule":"*/2 * * * * *","rules":6');

    writeFileSync(path, 'gateway: { base_url: 42 }\n');
    run.child.kill('SIGHUP');
    await waitFor('the rejection', () => messages(run.output()).some((m) => m.startsWith('configuration rejected')));

    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 0, signal: null });
    expect(messages(run.output()).at(-1)).toBe('boxwatch stopped');
  });

  it('other commands still end on a hangup', async () => {
    const other = spawnBoxwatch(['sim', '--port', '0', '--devices', '1']);
    await waitFor('the simulator to listen', () => other.output().includes('listening on'), 20_000);
    other.child.kill('SIGHUP');
    expect(await other.exit).toEqual({ code: null, signal: 'SIGHUP' });
  });
});
