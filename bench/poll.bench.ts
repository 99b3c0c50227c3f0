/**
 * Poll-cycle cost against the simulator over real HTTP. The simulator runs in a child process
 * (`boxwatch sim`) so that its CPU is not counted; this process runs the real client, poller and a
 * real SQLite file. For 1,000 and 10,000 boxes: the first cycle (details for every box) and the
 * steady state (device list + about 1/10 of the fleet's details at a 30 s schedule with
 * details_every 5m), wall time, CPU time (user+system of this process) and peak RSS.
 *
 *   npm run build && node dist/bench/poll.bench.js [boxes...]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApp } from '../src/app.js';
import { defaultConfig } from '../src/config/index.js';
import { silentLogger } from '../src/log.js';

const here = dirname(fileURLToPath(import.meta.url));
const KEY = 'bench-key';
const STEADY_CYCLES = 8;

async function startSim(devices: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(here, '..', 'src', 'main.js'), 'sim', '--port', '0', '--devices', String(devices), '--key', KEY], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(buffered);
      if (m?.[1]) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
  return { url, child };
}

function measure<T>(fn: () => Promise<T>): Promise<{ result: T; wallMs: number; cpuMs: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return fn().then((result) => {
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { result, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const fmt = (ms: number): string => `${ms.toFixed(0)} ms`;

async function bench(devices: number): Promise<void> {
  const { url, child } = await startSim(devices);
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-poll-'));
  try {
    const config = defaultConfig(KEY);
    config.gateway.baseUrl = url;
    config.gateway.concurrency = 16;
    config.storage.path = join(dir, 'bench.db');
    const app = createApp({ config, logger: silentLogger });
    const first = await measure(() => app.runOnce());
    const steady: { wallMs: number; cpuMs: number; details: number }[] = [];
    for (let i = 0; i < STEADY_CYCLES; i++) {
      const m = await measure(() => app.runOnce());
      if (m.result?.cycle.outcome !== 'ok') throw new Error(`cycle failed: ${m.result?.cycle.error}`);
      steady.push({ wallMs: m.wallMs, cpuMs: m.cpuMs, details: m.result.cycle.detailsFetched });
    }
    await app.stop();
    const rssMb = process.resourceUsage().maxRSS / 1024;
    console.log(
      `${devices} boxes  first cycle: wall ${fmt(first.wallMs)}, cpu ${fmt(first.cpuMs)}, details ${first.result?.cycle.detailsFetched}` +
        ` | steady (median of ${STEADY_CYCLES}): wall ${fmt(median(steady.map((s) => s.wallMs)))}, cpu ${fmt(median(steady.map((s) => s.cpuMs)))},` +
        ` details/cycle ${median(steady.map((s) => s.details))} | peak RSS ${rssMb.toFixed(0)} MB`,
    );
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
for (const n of sizes.length > 0 ? sizes : [1_000, 10_000]) {
  await bench(n);
}
