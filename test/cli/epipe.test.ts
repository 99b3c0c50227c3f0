/**
 * The BUILT CLI writing into a pipe whose reader went away (`boxwatch calls list --all | head -1`):
 * it ends quietly (exit 0, nothing on stderr), not with an unhandled EPIPE stack trace. The reader
 * here closes its end of the real OS pipe after the first chunk; the output (thousands of calls as
 * JSON) is far larger than a pipe's buffer, so later writes meet the closed pipe.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt, MAIN } from '../e2e/build.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { baseEnv } from '../helpers/cli-process.js';

let sim: RunningSimulator;
beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: 'epipe-key', devices: 20, seed: 4, clock: new FakeClock(Date.now()), historyCalls: 4000 });
}, 120_000);
afterAll(async () => {
  await sim?.close();
});

describe('output into a closed pipe', () => {
  it('ends quietly when the reader closes the pipe early', async () => {
    const child = spawn(process.execPath, [MAIN, 'calls', 'list', '--all', '--format', 'json'], {
      env: { ...baseEnv(), BOXWATCH_GATEWAY_URL: sim.url, BOXWATCH_SECRET_KEY: 'epipe-key' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    let first = '';
    child.stdout.once('data', (c: Buffer) => {
      first = c.toString();
      child.stdout.destroy(); // like `head -1` once it has its line
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ first: first.slice(0, 1), err, code }).toEqual({ first: '[', err: '', code: 0 });
  }, 60_000);
});
