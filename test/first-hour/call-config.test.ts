/**
 * `call`, `calls list` and `calls show` take the gateway address and key from the configuration
 * like every command (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml); `--gateway`,
 * BOXWATCH_GATEWAY_URL and BOXWATCH_SECRET_KEY override it; `--from` takes SERIAL or box:SERIAL.
 * The built CLI as a child process against the simulator over real HTTP. The simulator's key is
 * not the development key, so a command that did not read the key from the file would get 401.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { FakeClock } from '../helpers/fake-clock.js';

const KEY = 'first-hour-call-key-41c9';
const DEAD = 'http://127.0.0.1:9';
let dir: string;
let sim: RunningSimulator;
let serial: string;

/** A configuration as `boxwatch init` writes it: key and notifier secrets from the environment. */
function writeConfig(path: string, baseUrl: string): void {
  writeFileSync(
    path,
    `gateway: { base_url: "${baseUrl}", secret_key: "\${GW_KEY}" }
notifiers:
  - { name: ops-mail, type: email, smtp_url: "\${SMTP_URL}", from: boxwatch@example.com, to: [ops@example.com] }
`,
  );
}

beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: KEY, devices: 5, seed: 3, clock: new FakeClock(Date.now()) });
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  serial = (sim.sim.fleet.boxes[0] as { serial: string }).serial;
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-call-config-'));
  writeConfig(join(dir, 'boxwatch.yaml'), sim.url);
  mkdirSync(join(dir, 'elsewhere'));
  writeConfig(join(dir, 'dead.yaml'), DEAD);
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/** SMTP_URL is never set: the call commands use only the gateway section. */
const env = { GW_KEY: KEY };

describe('the gateway comes from the configuration', () => {
  it('./boxwatch.yaml in the working directory', async () => {
    const r = await runBuilt(['calls', 'list', '--limit', '3'], { cwd: dir, env });
    expect(r.err).toBe('note: showing the first 3 matching calls; more calls may match (use --all)\n');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^CALL ID\s+STATUS/);
    expect(r.out.trim().split('\n')).toHaveLength(4);
  });

  it('--config FILE and BOXWATCH_CONFIG, from another directory', async () => {
    const cwd = join(dir, 'elsewhere');
    const viaFlag = await runBuilt(['calls', 'show', '100001', '--config', join(dir, 'boxwatch.yaml')], { cwd, env });
    expect(viaFlag.code).toBe(0);
    expect(viaFlag.out).toMatch(/^FIELD\s+VALUE\ncall_id\s+100001\n/);
    const viaEnv = await runBuilt(['calls', 'show', '100001'], { cwd, env: { ...env, BOXWATCH_CONFIG: join(dir, 'boxwatch.yaml') } });
    expect(viaEnv).toEqual(viaFlag);
  });

  it('an unset key variable is named (exit 2)', async () => {
    const r = await runBuilt(['calls', 'list'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.err).toContain('gateway.secret_key: environment variable GW_KEY is not set');
    expect(r.err).not.toContain('SMTP_URL');
  });
});

describe('--gateway and the environment override the file', () => {
  it('--gateway and BOXWATCH_GATEWAY_URL beat base_url', async () => {
    const config = ['--config', join(dir, 'dead.yaml')];
    const dead = await runBuilt(['calls', 'list', '--limit', '1', ...config], { env });
    expect(dead.code).toBe(1); // the file's address really is used
    expect((await runBuilt(['calls', 'list', '--limit', '1', ...config, '--gateway', sim.url], { env })).code).toBe(0);
    expect((await runBuilt(['calls', 'list', '--limit', '1', ...config], { env: { ...env, BOXWATCH_GATEWAY_URL: sim.url } })).code).toBe(0);
  });

  it('BOXWATCH_SECRET_KEY beats secret_key', async () => {
    const wrong = { GW_KEY: 'not-the-key' };
    const refused = await runBuilt(['calls', 'list', '--limit', '1'], { cwd: dir, env: wrong });
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('error [unauthorized]');
    const r = await runBuilt(['calls', 'list', '--limit', '1'], { cwd: dir, env: { ...wrong, BOXWATCH_SECRET_KEY: KEY } });
    expect(r.code).toBe(0);
  });
});

describe('call --from', () => {
  it('accepts SERIAL as well as box:SERIAL', async () => {
    for (const from of [serial, `box:${serial}`]) {
      const r = await runBuilt(['call', '--from', from, '--to', '+14155550123', '--agent', '101', '--format', 'json'], { cwd: dir, env });
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      const call = JSON.parse(r.out) as { call_id: string; from: string };
      expect(call.from).toBe(`box:${serial}`);
      const shown = await runBuilt(['calls', 'show', call.call_id], { cwd: dir, env });
      expect(shown.out).toMatch(new RegExp(`\\nfrom\\s+box:${serial}\\n`));
    }
  });
});
