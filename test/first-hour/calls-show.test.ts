/**
 * `calls show` prints the transcript as it reads, from the outside (the built CLI against the
 * simulator over HTTP): its line breaks are line breaks; other control characters are escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { FakeClock } from '../helpers/fake-clock.js';

const KEY = 'first-hour-calls-show-key';
let sim: RunningSimulator;
let id: number;

beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: KEY, devices: 5, seed: 8, clock: new FakeClock(Date.now()) });
  id = 100001;
  while (!sim.sim.calls.get(id)?.transcript) id += 1;
});

afterAll(() => sim.close());

const show = () => runBuilt(['calls', 'show', String(id), '--gateway', sim.url], { env: { BOXWATCH_SECRET_KEY: KEY } });

describe('calls show', () => {
  it('prints each transcript line on its own line, after the fields', async () => {
    const transcript = sim.sim.calls.get(id)?.transcript as string;
    const r = await show();
    expect(r.code).toBe(0);
    const lines = transcript.split('\n');
    expect(lines.length).toBeGreaterThan(2);
    expect(r.out).toContain(`\ntranscript:\n${lines.map((l) => `  ${l}\n`).join('')}`);
    expect(r.out).not.toContain('\\x0a');
  });

  it('escapes any other control character in a transcript', async () => {
    const call = sim.sim.calls.get(id);
    if (!call) throw new Error('no call');
    call.transcript = 'Agent: Hello\u001b[2J\r\nCustomer: \u0007Bye';
    const r = await show();
    expect(r.code).toBe(0);
    expect(r.out).toContain('\ntranscript:\n  Agent: Hello\\x1b[2J\n  Customer: \\x07Bye\n');
    // eslint-disable-next-line no-control-regex
    expect(r.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
  });
});
