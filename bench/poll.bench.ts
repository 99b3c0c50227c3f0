/**
 * Poll-cycle cost against the simulator over real HTTP. The simulator runs in a child process
 * (`boxwatch sim`) so that its CPU is not counted; this process runs the real client, poller and a
 * real SQLite file. For 1,000 and 10,000 boxes: the first cycle (details for every box) and the
 * steady state (device list + about 1/10 of the fleet's details at a 30 s schedule with
 * details_every 5m), wall time, CPU time (user+system of this process) and peak RSS.
 *
 *   npm run build && node dist/bench/poll.bench.js [boxes...]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { defaultConfig } from '../src/config/index.js';
import { silentLogger } from '../src/log.js';
import { measure, median } from './measure.js';
import { startSimProcess } from './sim-process.js';

const KEY = 'bench-key';
const STEADY_CYCLES = 8;

const fmt = (ms: number): string => `${ms.toFixed(0)} ms`;

async function bench(devices: number): Promise<void> {
  const sim = await startSimProcess(devices, KEY);
  const url = sim.url;
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-poll-'));
  try {
    const config = defaultConfig(KEY);
    config.gateway.baseUrl = url;
    config.gateway.concurrency = 16;
    Object.assign(config.gateways[0]!, { baseUrl: url, concurrency: 16 }); // the account the daemon polls
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
    sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
for (const n of sizes.length > 0 ? sizes : [1_000, 10_000]) {
  await bench(n);
}
