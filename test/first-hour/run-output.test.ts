/**
 * What `boxwatch run` prints, from the outside (the built daemon as a child process, the
 * simulator over real HTTP): it says it is alive (a `polling ok` line, a line at each change of
 * the gateway's health), logs the HTTP URL once, and its console notifier prints each alert group
 * as one block: a header with counts and severity, one short line per alert, no colour when piped.
 * On a terminal (a pseudo-terminal through `script`) the block is coloured, unless NO_COLOR is set.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimBox } from '../../src/sim/fleet.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt, MAIN } from '../e2e/build.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';

const KEY = 'first-hour-run-key-77d2';
let dir: string;
const daemons = new DaemonProcesses({ BOXWATCH_SECRET_KEY: KEY, NO_COLOR: '' });
const sims: RunningSimulator[] = [];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-run-output-'));
});

afterAll(async () => {
  daemons.killAll();
  await Promise.all(sims.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, gatewayPort: number, httpPort: number): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    `gateway: { base_url: "http://127.0.0.1:${gatewayPort}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 2s }
poll: { schedule: "* * * * * *" }
storage: { path: "${join(dir, `${name}.db`)}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s, gateway: { unreachable_after: 100 } }
notifiers:
  - { name: console, type: console }
http: { listen: "127.0.0.1:${httpPort}" }
log: { level: info, format: json }
`,
  );
  return path;
}

const text = (): string => daemons.output.join('');
const messages = (): string[] =>
  text()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

describe('boxwatch run', () => {
  it('says it is alive, logs its URL once, and prints each alert group as one block', async () => {
    const gatewayPort = await freePort();
    const httpPort = await freePort();
    const child = daemons.spawn(writeConfig('alive', gatewayPort, httpPort));

    // No gateway yet: the health change is one line, not one per failed cycle.
    await daemons.until('the gateway failing line', () => messages().some((m) => m.startsWith('gateway failing (')));
    const sim = await startSimulator({ port: gatewayPort, key: KEY, devices: 6, seed: 4 });
    sims.push(sim);
    sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
    await daemons.until('the gateway back', () => messages().some((m) => /^gateway answering again after \d+ failed cycles?$/.test(m)));
    await daemons.until('polling ok', () => messages().some((m) => /^polling ok: 6 boxes, 0 firing, last cycle \d+ ms$/.test(m)));
    expect(messages().filter((m) => m.startsWith('gateway failing ('))).toHaveLength(1);

    const [a, b] = sim.sim.fleet.boxes.slice(0, 2) as [SimBox, SimBox];
    sim.sim.fleet.apply([a, b], { kind: 'disconnect' });
    await daemons.until('the firing block', () => text().includes('FIRING 2 · critical'));
    sim.sim.fleet.apply([a], { kind: 'connect' });
    await daemons.until('the resolved block', () => text().includes('RESOLVED 1 · critical'));

    const lines = text().split('\n');
    const header = lines.findIndex((l) => / FIRING 2 · critical$/.test(l));
    expect(lines[header]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC FIRING 2 · critical$/);
    const block = lines.slice(header + 1, header + 3).sort();
    for (const [i, box] of [a, b].sort((x, y) => x.serial.localeCompare(y.serial)).entries()) {
      expect(block[i]).toMatch(new RegExp(`^ {2}FIRING {4}${box.serial} "${box.name}" {2}disconnected \\(last seen [^)]+\\) {2}· box-offline, for \\d+s$`));
      expect(block[i]).not.toMatch(/value|threshold/);
    }
    const resolved = lines[lines.findIndex((l) => / RESOLVED 1 · critical$/.test(l)) + 1];
    expect(resolved).toMatch(new RegExp(`^ {2}RESOLVED {2}${a.serial} .* · box-offline, after \\d+s$`));
    expect(text()).not.toContain('\u001b'); // piped: no colour

    const url = `http://127.0.0.1:${httpPort}`;
    expect(text().split('\n').filter((l) => l.includes(url))).toHaveLength(1);

    child.kill('SIGTERM');
    expect(await daemons.exited(child)).toEqual({ code: 0, signal: null });
  });
});

describe('colour on a terminal', () => {
  const hasScript = spawnSync('script', ['--version']).status === 0;
  /** The first alert block's header, coloured or not, up to its severity. */
  // eslint-disable-next-line no-control-regex
  const FIRST_HEADER = /FIRING(\u001b\[0m)? \d+ · (\u001b\[\d+m)?(critical|warning|info)/;

  /**
   * `boxwatch demo` under a pseudo-terminal (util-linux `script`), its output as the terminal shows
   * it up to its first alert block's header (the first tick, the cycle and group_wait: seconds,
   * more on a loaded machine); then it is stopped. 60 s is only the bound of the run.
   */
  async function demoOnTerminal(env: NodeJS.ProcessEnv): Promise<string> {
    const db = join(dir, `tty-${Object.keys(env).length}.db`);
    const command = `${process.execPath} ${MAIN} demo --duration 60s --fresh --db ${db}`;
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (FIRST_HEADER.test(out)) child.kill('SIGTERM');
    });
    await once(child, 'close');
    return out;
  }

  it.runIf(hasScript)('FIRING and the severity are coloured, and NO_COLOR turns it off', async () => {
    const [coloured, plain] = await Promise.all([demoOnTerminal({}), demoOnTerminal({ NO_COLOR: '1' })]);
    // eslint-disable-next-line no-control-regex
    expect(coloured).toMatch(/\u001b\[31mFIRING\u001b\[0m \d+ · \u001b\[(31|33|36)m(critical|warning|info)\u001b\[0m/);
    expect(plain).toMatch(/ FIRING \d+ · (critical|warning|info)/);
    expect(plain).not.toContain('\u001b[31m');
  }, 90_000);
});
