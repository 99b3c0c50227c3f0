/**
 * Call ingestion cost for a large fleet: 10,000 boxes placing 6 calls an hour each (1,000 calls a
 * minute), read by the call sync once a simulated minute. The simulator runs in a child process
 * (`boxwatch sim`, its CPU not counted) at 60x speed with background call traffic, so one real
 * second is one simulated minute of calls; this process runs the real gateway client, call sync
 * (list pages newest first, call details for calls not final yet), the call rules' facts (the
 * demo's two call rules) and a real SQLite file, over real HTTP on 127.0.0.1.
 * Per cycle: gateway requests (list pages + call details), calls new, wall time and CPU time
 * (user+system of this process); the first cycle catches up from the simulator's start.
 *
 *   npm run build && node dist/bench/calls-ingest.bench.js [boxes] [cycles]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { silentLogger } from '../src/log.js';
import { sleep } from './daemon.js';
import { startSimProcess } from './sim-process.js';
import { median } from './storage-helpers.js';

const KEY = 'bench-key';
const SPEED = 60;

async function bench(devices: number, cycles: number, safetyWindow: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-calls-'));
  const scenario = join(dir, 'scenario.yaml');
  writeFileSync(scenario, 'calls: { per_box_per_hour: 6 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n');
  const { url, child } = await startSimProcess(devices, KEY, ['--speed', String(SPEED), '--scenario', scenario]);
  try {
    const config = parseConfig(
      `gateway: { base_url: "${url}", secret_key: ${KEY}, concurrency: 16 }
calls: { per_page: 100, max_requests: 400, safety_window: ${safetyWindow} }
storage: { path: "${join(dir, 'bench.db')}" }
rules:
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 5, above: 50, clear_below: 20, severity: warning }
  - { name: call-stuck, kind: call_stuck, max_duration: 30m, severity: warning }
notifiers: []
http: false
`,
      {},
    );
    const app = createApp({ config, logger: silentLogger });
    await sleep(5_000); // five simulated minutes of calls before the first read
    const rows: { pages: number; details: number; added: number; wallMs: number; cpuMs: number }[] = [];
    for (let i = 0; i <= cycles; i++) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const r = await app.runCallsOnce();
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      if (r?.outcome !== 'ok') throw new Error(`call sync failed: ${r?.errorCode}`);
      rows.push({ pages: r.pages, details: r.details, added: r.added, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 });
      await sleep(Math.max(0, 1_000 - wallMs)); // the next simulated minute
    }
    await app.stop();
    const [first, ...steady] = rows as [(typeof rows)[number], ...typeof rows];
    console.log(
      `${devices} boxes x 6 calls/h, safety_window ${safetyWindow}  first cycle (5 simulated minutes): ${first.pages} pages + ${first.details} details, ${first.added} calls, wall ${first.wallMs.toFixed(0)} ms, cpu ${first.cpuMs.toFixed(0)} ms` +
        ` | steady (median of ${steady.length} one-minute cycles): ${median(steady.map((s) => s.pages))} pages + ${median(steady.map((s) => s.details))} details, ${median(steady.map((s) => s.added))} calls new,` +
        ` wall ${median(steady.map((s) => s.wallMs)).toFixed(0)} ms, cpu ${median(steady.map((s) => s.cpuMs)).toFixed(0)} ms (max ${Math.max(...steady.map((s) => s.cpuMs)).toFixed(0)} ms)` +
        ` | peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
    );
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const [boxes, cycles] = process.argv.slice(2).map(Number);
for (const window of ['10m', '2m']) await bench(boxes && boxes > 0 ? boxes : 10_000, cycles && cycles > 0 ? cycles : 8, window);
