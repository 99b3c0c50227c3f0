/**
 * `boxwatch run` loads what the daemon uses, not what other commands or unused notifiers need: a
 * daemon with no template, no e-mail notifier and a SQLite store never loads the simulator,
 * LiquidJS, nodemailer, pg, the export code or playwright (their memory counts against the
 * daemon's RSS target, BENCHMARKS.md). The real built process is run against the simulator until
 * a cycle succeeded, and lists at exit every module it loaded (ES modules through a loader hook,
 * CommonJS ones from require.cache).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { MAIN, ROOT, ensureBuilt } from '../e2e/build.js';
import { until } from '../helpers/wait.js';

const KEY = 'run-modules-key';
let dir: string;
let sim: RunningSimulator | undefined;

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A preload that records every module the process loads, written to `out` at exit. */
function moduleRecorder(out: string): string {
  writeFileSync(join(dir, 'hooks.mjs'), `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(${JSON.stringify(out)}, url + '\\n'); return next(url, context); }\n`);
  const preload = join(dir, 'record-modules.mjs');
  writeFileSync(
    preload,
    `import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
register('./hooks.mjs', import.meta.url);
const require = createRequire(import.meta.url);
process.on('exit', () => appendFileSync(${JSON.stringify(out)}, Object.keys(require.cache).join('\\n') + '\\n'));
`,
  );
  return preload;
}

describe('boxwatch run', () => {
  it('loads neither the simulator, LiquidJS, nodemailer, pg, the export code nor playwright', async () => {
    dir = mkdtempSync(join(tmpdir(), 'boxwatch-run-modules-'));
    sim = await startSimulator({ port: 0, key: KEY, devices: 5 });
    const config = join(dir, 'boxwatch.yaml');
    writeFileSync(
      config,
      `gateway: { base_url: "${sim.url}", secret_key: "${KEY}" }\npoll: { schedule: "* * * * * *" }\nstorage: { path: "${join(dir, 'boxwatch.db')}" }\nhttp: { listen: "127.0.0.1:0" }\nlog: { format: json }\n`,
    );
    const out = join(dir, 'modules.txt');
    const child = spawn(process.execPath, ['--import', moduleRecorder(out), MAIN, 'run', '--config', config], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    // Healthy: /healthz answers 200 once a cycle succeeded (or the daemon ended: the check below says so).
    const healthy = async (): Promise<'healthy' | 'exited' | false> => {
      if (child.exitCode !== null) return 'exited';
      const url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
      return url !== undefined && (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) && 'healthy';
    };
    const state = await until('the daemon to become healthy', healthy, { timeoutMs: 60_000, everyMs: 100 }).catch(() => 'timed out');
    if (state !== 'healthy') throw new Error(`the daemon did not become healthy (${state}):\n${output.slice(-2000)}`);
    child.kill('SIGTERM');
    await once(child, 'exit');

    const loaded = readFileSync(out, 'utf8').split('\n').filter((l) => l !== '');
    expect(loaded.some((m) => m.includes('/dist/src/poller/cycle.js'))).toBe(true); // the recorder works
    expect(loaded.some((m) => m.includes('/node_modules/better-sqlite3/'))).toBe(true);
    const unwanted = loaded.filter((m) => /\/dist\/src\/sim\/(?!dev-key)|\/dist\/src\/export\/export\.js|\/node_modules\/(liquidjs|nodemailer|pg|pg-[a-z]+|playwright[a-z-]*)\//.test(m));
    expect(unwanted).toEqual([]);
  }, 90_000);
});
