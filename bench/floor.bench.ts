/**
 * boxwatch's poll cycle against the floor: a naive poller doing the same gateway work (the device
 * list, the same details requests at the same concurrency over keep-alive connections (undici's
 * Pool, the cheapest client measured here; see NaivePoller), `JSON.parse`, one SQLite transaction inserting a row per box) and nothing else: no validation,
 * no history encoding, no alert rules. Both run in one process, cycle after cycle, against the
 * simulator over real HTTP (a child process, so that its CPU is not counted); every figure is a
 * ratio measured side by side, which holds on a shared machine where absolute times do not.
 *
 * Settings of issue 14: schedule every 5 s, details_every 50 s (a tenth of the details per tick;
 * 60 s and 10 m at 100,000 boxes), concurrency 16, no notifiers, HTTP off. Each fleet size runs in its own child process (its own
 * peak RSS): the first cycle (details of every box) of each, then STEADY cycles in pairs (boxwatch,
 * then the floor fetching the details of the very serials boxwatch fetched). A last child runs
 * the daemon (`app.start()`: schedule, HTTP, /metrics scraped) at 10,000 boxes for a while and
 * samples its memory.
 *
 * The steady cycles are PACED as the schedule paces the daemon's (`paceMsFor`): boxwatch's cycles
 * start one interval apart (wall clock), the floor's half an interval after each, so that the
 * gateway's data moves between two cycles as much as it does for the daemon (boxwatch writes a
 * box's row only when it changed; cycles back to back, as this bench ran them before, found most
 * `last_seen` unmoved and flattered boxwatch). Each side's CPU counts from its cycle's start to
 * the other side's start (the garbage collection its cycle leaves behind is its own), and the
 * steady figures are means over the cycles: at a 5 s schedule every other cycle finds the
 * simulator's 10 s tick passed (nearly every row changed), the others find nearly nothing moved,
 * and a median would pick one kind. The box rows boxwatch wrote in each cycle are printed.
 *
 *   npm run build && node --expose-gc dist/bench/floor.bench.js [--sizes 1000,10000,100000]
 *     [--daemon 10000] [--cycles N (even; default cyclesFor)] [--warmup N (even, default 4: pairs of
 *     cycles run first and not measured, while V8 compiles each side's cycle code)]
 *     [--memory-minutes 2] [--memory-boxes 10000] [--json bench/results/floor.json]
 *   (--sizes '' --memory-minutes 30: the memory run alone)
 *   (--daemon SIZES: also `boxwatch run` as its own process, HTTP on, against the floor: see
 *   measureDaemon; --daemon-http off: that daemon with `http: false`; --node-args='--cpu-prof
 *   --cpu-prof-dir=DIR' profiles it)
 *   (npm run bench -- floor: the defaults)
 *   (--profile DIR: a CPU and an allocation profile of each steady cycle, boxwatch's and the
 *   floor's, written to DIR; the profilers' own cost makes those runs' figures not comparable;
 *   `node dist/bench/profile-summary.js DIR` sums them up by function)
 */
import { spawn } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { createApp, type App } from '../src/app.js';
import { validateConfig, type Config } from '../src/config/index.js';
import { createGatewayClient } from '../src/gateway/client.js';
import { API_PREFIX } from '../src/gateway/messages.js';
import type { GatewayClient } from '../src/gateway/types.js';
import { silentLogger } from '../src/log.js';
import { mapWithConcurrency } from '../src/poller/pool.js';
import { scheduleIntervalMs } from '../src/poller/scheduler.js';
import { TICK_MS } from '../src/sim/fleet.js';
import { gcPauseMs, mean, measure, sleepUntil, type Measured } from './measure.js';
import { naiveGetJson } from './naive-get.js';
import { clockTicks, cpuSeconds, startDaemon, statusMiB } from './daemon.js';
import { startSimProcess } from './sim-process.js';
import { markStages } from './stage-marks.js';

const KEY = 'bench-floor-key';
const CONCURRENCY = 16;
/**
 * Issue 14's schedule: every 5 s, details_every 50 s (a tenth of the details per tick). At 100,000
 * boxes a cycle takes longer than 5 s on this machine, so that size polls every 60 s with
 * details_every 10 m: the same tenth per tick, and a cycle deadline (90 % of the interval) that
 * does not cut the details short.
 */
function scheduleFor(boxes: number): { schedule: string; detailsEvery: string } {
  return boxes > 10_000 ? { schedule: '0 * * * * *', detailsEvery: '10m' } : { schedule: '*/5 * * * * *', detailsEvery: '50s' };
}
/**
 * How far apart boxwatch's steady cycles start: the schedule's interval, as the daemon's cycles do.
 * The simulator's clock runs at real speed, as boxwatch's does (an accelerated simulator would
 * put the gateway's times ahead of boxwatch's clock), and moves every connected box's last_seen
 * once per tick (TICK_MS, 10 s): an interval of a tick or longer moves every one of them once,
 * so the 60 s schedule at 100,000 boxes is paced at one tick, with the same rows changing.
 */
function paceMsFor(boxes: number): number {
  return Math.min(scheduleIntervalMs(scheduleFor(boxes).schedule), TICK_MS);
}
/**
 * Steady cycles measured per size, by default: 24 below 10,000 boxes, 8 from there. At 1,000 boxes
 * one full garbage collection of the process (20 to 30 ms) is as long as a whole cycle of either
 * side, and lands in one side's window or the other's: over 8 cycles the ratio swung from 1.5x to
 * 4.2x between runs of the same code; three times as many cycles average those landings out
 * (and take two minutes).
 */
function cyclesFor(boxes: number): number {
  return boxes < 10_000 ? 24 : 8;
}
const here = fileURLToPath(import.meta.url);

/** What one fleet size measured (one child process). */
export interface SizeResult {
  boxes: number;
  settings: { schedule: string; detailsEvery: string };
  first: { boxwatch: CycleFigures; floor: CycleFigures };
  steady: {
    cycles: number;
    /** Pairs of cycles run before the measured ones, and not measured (`--warmup`). */
    warmupCycles: number;
    /** How far apart boxwatch's steady cycles started (paceMsFor), ms. */
    paceMs: number;
    boxwatch: CycleFigures;
    floor: CycleFigures;
    /** Mean boxwatch CPU over mean floor CPU. */
    ratio: number;
    cpuRatios: number[];
    /** Rows of `boxes` boxwatch wrote in each steady cycle (the data that moved since its previous cycle). */
    boxRowsWritten: number[];
  };
  /** Peak RSS of the child process (boxwatch, the floor and the device lists), MiB. */
  peakRssMiB: number;
}

export interface CycleFigures {
  /** Means for the steady state. */
  wallMs: number;
  cpuMs: number;
  /** Of cpuMs, the CPU after the cycle ended, until the other side's start (mostly the garbage collection it left); 0 for a first cycle. */
  cpuAfterMs: number;
  /** Of cpuMs, the main thread's garbage-collection pauses (from the cycle's start to the other side's). */
  gcPauseMs: number;
  /**
   * Of cpuMs, the CPU of the process's other threads (V8's garbage-collection helpers and
   * optimizing compiler, libuv's pool): cpuMs less the main thread's (measure's `mainCpuMs`); null
   * where that is not known (not Linux).
   */
  otherThreadsCpuMs: number | null;
  details: number;
}

export interface MemoryResult {
  boxes: number;
  minutes: number;
  cycles: number;
  /** After each sample's forced GC: resident set and live JS heap, MiB, with seconds since start. */
  samples: { s: number; rssMiB: number; heapMiB: number }[];
  /** Least-squares slope over the second half of the run (after warm-up), MiB per hour. */
  rssSlopeMiBPerHour: number;
  heapSlopeMiBPerHour: number;
  peakRssMiB: number;
}

export interface FloorReport {
  date: string;
  machine: string;
  loadAverage: number[];
  settings: { concurrency: number };
  sizes: SizeResult[];
  /** `boxwatch run` as its own process against the floor (`--daemon`). */
  daemon: DaemonResult[];
  memory: MemoryResult | null;
}

/** The configuration of issue 14's measurements, pointed at the simulator and a database file. */
function benchConfig(url: string, dbPath: string, boxes: number, http: boolean): Config {
  const { schedule, detailsEvery } = scheduleFor(boxes);
  return validateConfig(
    {
      gateway: { base_url: url, secret_key: KEY, concurrency: CONCURRENCY },
      poll: { schedule, details_every: detailsEvery },
      storage: { path: dbPath },
      notifiers: [],
      http: http ? { listen: '127.0.0.1:0' } : false,
    },
    {},
    'floor bench configuration',
  );
}

/**
 * The floor: the same requests, JSON.parse, one transaction inserting one row per box. It keeps
 * nothing between cycles and checks nothing: no poller can do less for the same data.
 */
class NaivePoller {
  /** undici's Pool, the client boxwatch uses too: the cheapest HTTP client measured here. */
  private readonly pool: Pool;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;

  constructor(
    private readonly url: URL,
    dbPath: string,
  ) {
    this.pool = new Pool(url.origin, { connections: CONCURRENCY, pipelining: 1 });
    this.db = new Database(dbPath);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec('CREATE TABLE samples (t INTEGER, serial TEXT, connected INTEGER, battery INTEGER, signal INTEGER, last_seen TEXT)');
    this.insert = this.db.prepare('INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)');
  }

  /** The serials of the device list (the daemon mode picks the floor's details from them). */
  async listSerials(): Promise<string[]> {
    const list: { serial_no: string }[] = (await this.getJson('/box/device-list')).data;
    return list.map((b) => b.serial_no);
  }

  private getJson(path: string): Promise<{ data: never }> {
    return naiveGetJson(this.pool, KEY, path);
  }

  /** One cycle: the list, the details of `serials`, one transaction. Returns the details fetched. */
  async cycle(serials: readonly string[]): Promise<number> {
    const list: { serial_no: string; connected: boolean; battery_level: number | null; last_seen: string }[] = (await this.getJson('/box/device-list')).data;
    const details = new Map<string, { signal_strength: number }>();
    await mapWithConcurrency(serials, CONCURRENCY, async (serial) => {
      details.set(serial, (await this.getJson(`/box/device/${encodeURIComponent(serial)}`)).data);
    });
    const t = Date.now();
    this.db.transaction(() => {
      for (const box of list) {
        this.insert.run(t, box.serial_no, box.connected ? 1 : 0, box.battery_level, details.get(box.serial_no)?.signal_strength ?? null, box.last_seen);
      }
    })();
    return details.size;
  }

  async close(): Promise<void> {
    await this.pool.close();
    this.db.close();
  }
}

/** The gateway client of the app, noting the serials whose details each cycle asked for. */
function recordingClient(config: Config): { client: GatewayClient; takeSerials: () => string[] } {
  const inner = createGatewayClient({ baseUrl: config.gateway.baseUrl, secretKey: KEY, connections: CONCURRENCY });
  let serials: string[] = [];
  const client: GatewayClient = {
    ...inner,
    getDevice: (serial, options) => {
      serials.push(serial);
      return inner.getDevice(serial, options);
    },
  };
  return {
    client,
    takeSerials: () => {
      const taken = serials;
      serials = [];
      return taken;
    },
  };
}

/** The means of some runs (called once they are all over: see gcPauseMs). */
const figures = async (runs: Measured<number>[]): Promise<CycleFigures> => ({
  wallMs: mean(runs.map((r) => r.wallMs)),
  cpuMs: mean(runs.map((r) => r.cpuMs)),
  cpuAfterMs: mean(runs.map((r) => r.afterMs)),
  gcPauseMs: mean(await gcPauseMs(runs.map((r) => r.window))),
  otherThreadsCpuMs: runs.some((r) => r.mainCpuMs === null) ? null : mean(runs.map((r) => r.cpuMs - (r.mainCpuMs ?? 0))),
  details: mean(runs.map((r) => r.result)),
});

/**
 * Counts the rows of `boxes` that boxwatch's latest cycle wrote, through a read-only connection of
 * the bench's own to boxwatch's database file: a cycle writes a box's row, its `last_polled`
 * column set to the cycle's start, only when the row changed (src/store/history/writer.ts,
 * `ListedBoxWrite.changed`). Run between cycles, outside the measured windows.
 */
function boxRowsWrittenCounter(dbPath: string): { count: () => number; close: () => void } {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const query = db.prepare('SELECT count(*) FROM boxes WHERE last_polled = (SELECT max(started_at) FROM cycles)').pluck();
  return { count: () => query.get() as number, close: () => db.close() };
}

async function runCycle(app: App): Promise<number> {
  const result = await app.runOnce();
  if (result?.cycle.outcome !== 'ok') throw new Error(`boxwatch cycle failed: ${result?.cycle.error ?? 'skipped'}`);
  return result.cycle.detailsFetched;
}

/**
 * Warms the simulator up (its JIT, its fleet model) with Node's built-in fetch, whose HTTP code is
 * Node's own bundled copy, not the undici package boxwatch and the floor load: their first cycles
 * stay cold, as a daemon's first cycle is, while the simulator answers as a gateway in service would.
 */
async function warmUp(url: string, boxes: number): Promise<void> {
  const get = async (path: string): Promise<unknown> => (await fetch(`${url}${API_PREFIX}${path}`, { headers: { 'account-secret-key': KEY } })).json();
  const list = (await get('/box/device-list')) as { data: { serial_no: string }[] };
  const serials = list.data.slice(0, Math.min(boxes, 2_000)).map((b) => b.serial_no);
  await mapWithConcurrency(serials, CONCURRENCY, (serial) => get(`/box/device/${encodeURIComponent(serial)}`));
}

/**
 * A CPU profile and an allocation profile of each of boxwatch's steady cycles alone (V8's sampling
 * profilers through the inspector), written as `DIR/boxwatch-<boxes>-<cycle>.cpuprofile` and
 * `.heapprofile` (open them in Chrome's DevTools), and the same of the floor's steady cycles
 * (`DIR/floor-<boxes>-<cycle>.*`).
 */
async function profiled<T>(dir: string | undefined, name: string, fn: () => Promise<T>): Promise<T> {
  if (dir === undefined) return fn();
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 250 });
    await session.post('Profiler.start');
    await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    const result = await fn();
    const { profile } = await session.post('Profiler.stop');
    const { profile: heap } = await session.post('HeapProfiler.stopSampling');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(heap));
    return result;
  } finally {
    session.disconnect();
  }
}

/**
 * One fleet size, in this (child) process. `marks`: a line `@@ bw <i> <heap>`, `@@ fl <i> <heap>` on
 * stdout before each side's steady cycle i (negative: a warm-up one) and `@@ end <heap>` after the
 * last (`<heap>`: the JavaScript heap in use, bytes), for bench/traced-floor.ts to cut V8's trace
 * into the sides' windows; and within boxwatch's, a line `@@ stage <name> <heap>` as its cycle
 * enters each stage (bench/stage-marks.ts) when `stages` is set too: its wrappers of the client, the
 * store, the writer and the pipeline are code of their own, which bench/jit-trace.ts's compile
 * counts must not include, so only bench/gc-trace.ts asks for them (`--stages`).
 */
async function measureSize(boxes: number, cycles: number, warmup: number, profileDir?: string, marks = false, stages = false): Promise<SizeResult> {
  const mark = (text: string): void => void (marks && process.stdout.write(`@@ ${text} ${process.memoryUsage().heapUsed}\n`));
  const sim = await startSimProcess(boxes, KEY);
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-floor-'));
  try {
    const dbPath = join(dir, 'boxwatch.db');
    const config = benchConfig(sim.url, dbPath, boxes, false);
    const { client, takeSerials } = recordingClient(config);
    const app = createApp({ config, logger: silentLogger, client: marks && stages ? markStages(client, mark) : client, notifiers: [] });
    const floor = new NaivePoller(new URL(sim.url), join(dir, 'floor.db'));
    await warmUp(sim.url, boxes);
    // First cycles: boxwatch first, cold, as a daemon starts; then the floor with the same serials.
    const pace = paceMsFor(boxes);
    let start = performance.now();
    const bwFirst = await measure(() => runCycle(app));
    const fFirst = await measure(() => floor.cycle(takeSerials()));
    const rows = boxRowsWrittenCounter(dbPath);
    const bw: Measured<number>[] = [];
    const fl: Measured<number>[] = [];
    const boxRowsWritten: number[] = [];
    // The warm-up pairs run exactly as the measured ones, and are not kept.
    for (let i = -warmup; i < cycles; i++) {
      // One interval after the previous cycle's start (at once if the pair took longer).
      start = Math.max(start + pace, performance.now());
      await sleepUntil(start);
      mark(`bw ${i}`);
      const b = await profiled(i < 0 ? undefined : profileDir, `boxwatch-${boxes}-${i + 1}`, () => measure(() => runCycle(app), start + pace / 2));
      mark(`fl ${i}`);
      const f = await profiled(i < 0 ? undefined : profileDir, `floor-${boxes}-${i + 1}`, () => measure(() => floor.cycle(takeSerials()), start + pace));
      const written = rows.count();
      if (i < 0) continue;
      bw.push(b);
      fl.push(f);
      boxRowsWritten.push(written);
    }
    mark('end');
    rows.close();
    await app.stop();
    await floor.close();
    const steadyBw = await figures(bw);
    const steadyFloor = await figures(fl);
    return {
      boxes,
      settings: scheduleFor(boxes),
      first: {
        boxwatch: await figures([bwFirst]),
        floor: await figures([fFirst]),
      },
      steady: {
        cycles,
        warmupCycles: warmup,
        paceMs: pace,
        boxwatch: steadyBw,
        floor: steadyFloor,
        ratio: steadyBw.cpuMs / steadyFloor.cpuMs,
        cpuRatios: bw.map((b, i) => b.cpuMs / (fl[i]?.cpuMs ?? NaN)),
        boxRowsWritten,
      },
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
    };
  } finally {
    sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What `boxwatch run` as its own process measured against the floor (`--daemon`). */
export interface DaemonResult {
  boxes: number;
  http: boolean;
  settings: { schedule: string; detailsEvery: string };
  /** Steady cycles the daemon ran in the window (its own boxwatch_poll_cycles_total). */
  cycles: number;
  /** The daemon's CPU (all threads, /proc) over the window, per cycle, ms. */
  daemonCpuMs: number;
  /** Device details the daemon fetched per cycle (its boxwatch_gateway_requests_total), which the floor fetches too. */
  details: number;
  floor: { cycles: number; cpuMs: number; wallMs: number };
  ratio: number;
  /** The daemon's resident memory at the window's end and its peak (VmHWM), MiB. */
  rssMiB: number;
  peakRssMiB: number;
}

/** The successful cycles a daemon stored so far and the details they fetched, read from its database. */
function boxRowsWrittenCounterDb(dbPath: string): { totals: () => { cycles: number; details: number }; close: () => void } {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const query = db.prepare("SELECT count(*) AS cycles, coalesce(sum(details_fetched), 0) AS details FROM cycles WHERE outcome = 'ok'");
  return { totals: () => query.get() as { cycles: number; details: number }, close: () => db.close() };
}

/**
 * The daemon as users run it: `boxwatch run` (the built executable) as its own process, HTTP on,
 * its default rules and notifiers, on the schedule of `scheduleFor`; its CPU is read from /proc
 * over `cycles` of its own cycles after `warmup` of them, and divided by the cycles it counted. The
 * floor runs in this process at the same pace, half an interval after each of the daemon's ticks,
 * fetching as many details per cycle as the daemon did (read from its /metrics once per window).
 */
async function measureDaemon(boxes: number, cycles: number, warmup: number, http: boolean, nodeArgs: readonly string[] = []): Promise<DaemonResult> {
  const sim = await startSimProcess(boxes, KEY);
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-daemon-'));
  const settings = scheduleFor(boxes);
  const interval = scheduleIntervalMs(settings.schedule);
  const configPath = join(dir, 'boxwatch.yaml');
  const dbPath = join(dir, 'boxwatch.db');
  writeFileSync(
    configPath,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", concurrency: ${CONCURRENCY} }
poll: { schedule: "${settings.schedule}", details_every: "${settings.detailsEvery}" }
storage: { path: "${dbPath}" }
http: ${http ? '{ listen: "127.0.0.1:0" }' : 'false'}
log: { level: info, format: json }
`,
  );
  const floor = new NaivePoller(new URL(sim.url), join(dir, 'floor.db'));
  const daemon = await startDaemon(configPath, { BOXWATCH_SECRET_KEY: KEY }, 300_000, nodeArgs, 'first-cycle');
  try {
    const ticks = clockTicks();
    // The daemon's own cycle records, read through a connection of the bench's: asking the daemon
    // (its /metrics) would be work of its own in the window.
    const cycleRecords = boxRowsWrittenCounterDb(dbPath);
    const scrape = (): { cycles: number; details: number } => cycleRecords.totals();
    // Half an interval after each of the daemon's ticks (cron ticks on multiples of the interval).
    const nextFloorStart = (): number => performance.now() + ((interval * 1.5 - (Date.now() % interval)) % interval);
    const serials = await floor.listSerials();
    let offset = 0;
    const floorCycle = (count: number): Promise<number> => {
      const picked = Array.from({ length: count }, (_, i) => serials[(offset + i) % serials.length] as string);
      offset = (offset + count) % serials.length;
      return floor.cycle(picked);
    };
    // Warm-up: the daemon's first cycles (V8 compiles its cycle code) and the floor's, not
    // measured; the details the daemon fetched per cycle meanwhile are what the floor fetches after.
    const start0 = scrape();
    for (let i = 0; i < warmup; i++) {
      await sleepUntil(nextFloorStart());
      await floorCycle(Math.round(boxes / 10));
    }
    const before = scrape();
    const details = Math.round((before.details - start0.details) / Math.max(1, before.cycles - start0.cycles));
    const cpu0 = cpuSeconds(daemon.pid, ticks);
    const fl: Measured<number>[] = [];
    for (let i = 0; i < cycles; i++) {
      const start = nextFloorStart();
      await sleepUntil(start);
      fl.push(await measure(() => floorCycle(details), start + interval / 2));
    }
    const cpu1 = cpuSeconds(daemon.pid, ticks);
    const after = scrape();
    cycleRecords.close();
    const daemonCycles = after.cycles - before.cycles;
    const daemonCpuMs = ((cpu1 - cpu0) * 1000) / Math.max(1, daemonCycles);
    const floorCpuMs = mean(fl.map((f) => f.cpuMs));
    return {
      boxes,
      http,
      settings,
      cycles: daemonCycles,
      daemonCpuMs,
      details: (after.details - before.details) / Math.max(1, daemonCycles),
      floor: { cycles: fl.length, cpuMs: floorCpuMs, wallMs: mean(fl.map((f) => f.wallMs)) },
      ratio: daemonCpuMs / floorCpuMs,
      rssMiB: statusMiB(daemon.pid, 'VmRSS'),
      peakRssMiB: statusMiB(daemon.pid, 'VmHWM'),
    };
  } finally {
    await daemon.stop();
    await floor.close();
    sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return num / den;
}

/** The daemon (schedule, HTTP, /metrics scraped every sample) for `minutes`; memory sampled. */
async function measureMemory(boxes: number, minutes: number): Promise<MemoryResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench does)');
  const sim = await startSimProcess(boxes, KEY);
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-memory-'));
  let cycles = 0;
  try {
    const config = benchConfig(sim.url, join(dir, 'boxwatch.db'), boxes, true);
    const app = createApp({ config, logger: silentLogger, notifiers: [], onCycle: () => (cycles += 1) });
    await app.start();
    const t0 = performance.now();
    const samples: MemoryResult['samples'] = [];
    while (performance.now() - t0 < minutes * 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      await (await fetch(`${app.httpUrl}/metrics`)).text();
      gc();
      const m = process.memoryUsage();
      samples.push({ s: (performance.now() - t0) / 1000, rssMiB: m.rss / 2 ** 20, heapMiB: m.heapUsed / 2 ** 20 });
    }
    await app.stop();
    const later = samples.slice(Math.floor(samples.length / 2));
    const perHour = (key: 'rssMiB' | 'heapMiB'): number => slope(later.map((p) => ({ x: p.s / 3600, y: p[key] })));
    return { boxes, minutes, cycles, samples, rssSlopeMiBPerHour: perHour('rssMiB'), heapSlopeMiBPerHour: perHour('heapMiB'), peakRssMiB: process.resourceUsage().maxRSS / 1024 };
  } finally {
    sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs this file again as a child for one part, with --expose-gc; resolves with its JSON answer. */
function child(args: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', here, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`bench child ${args.join(' ')} exited with ${code}`))));
  });
}

const f0 = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 0 });

/** `, 95 on other threads` (the figures' otherThreadsCpuMs), or nothing where it is not known. */
const otherThreads = (c: CycleFigures): string => (c.otherThreadsCpuMs === null ? '' : `, ${f0(c.otherThreadsCpuMs)} on other threads`);

function printSize(r: SizeResult): void {
  const { first, steady } = r;
  console.log(
    `${f0(r.boxes)} boxes (schedule ${r.settings.schedule}, details_every ${r.settings.detailsEvery}) | steady (mean of ${steady.cycles} cycles ${f0(steady.paceMs / 1000)} s apart after ${f0(steady.warmupCycles)} not measured, ${f0(steady.boxwatch.details)} details): boxwatch ${f0(steady.boxwatch.cpuMs)} ms CPU (${f0(steady.boxwatch.cpuAfterMs)} of it after the cycle${otherThreads(steady.boxwatch)}, GC pauses ${f0(steady.boxwatch.gcPauseMs)}; ${f0(steady.boxwatch.wallMs)} ms wall),` +
      ` floor ${f0(steady.floor.cpuMs)} ms CPU (${f0(steady.floor.cpuAfterMs)} after${otherThreads(steady.floor)}, GC pauses ${f0(steady.floor.gcPauseMs)}; ${f0(steady.floor.wallMs)} ms wall), ratio ${steady.ratio.toFixed(2)}x` +
      ` (pairs ${steady.cpuRatios.map((x) => x.toFixed(1)).join(' ')}; box rows written ${steady.boxRowsWritten.map(f0).join(' ')})` +
      ` | first cycle (${f0(first.boxwatch.details)} details): boxwatch ${f0(first.boxwatch.wallMs)} ms wall / ${f0(first.boxwatch.cpuMs)} ms CPU, floor ${f0(first.floor.wallMs)} ms wall / ${f0(first.floor.cpuMs)} ms CPU` +
      ` | peak RSS ${f0(r.peakRssMiB)} MiB`,
  );
}

function printDaemon(r: DaemonResult): void {
  console.log(
    `daemon, ${f0(r.boxes)} boxes (boxwatch run, HTTP ${r.http ? 'on' : 'off'}; schedule ${r.settings.schedule}, details_every ${r.settings.detailsEvery}) | steady (mean of ${r.cycles} cycles, ${f0(r.details)} details): ` +
      `boxwatch run ${f0(r.daemonCpuMs)} ms CPU per cycle (all threads, /proc), floor ${f0(r.floor.cpuMs)} ms CPU (${f0(r.floor.wallMs)} ms wall, ${r.floor.cycles} cycles), ratio ${r.ratio.toFixed(2)}x | RSS ${f0(r.rssMiB)} MiB, peak ${f0(r.peakRssMiB)} MiB`,
  );
}

function printMemory(m: MemoryResult): void {
  const first = m.samples[0];
  const last = m.samples.at(-1);
  console.log(
    `memory, ${f0(m.boxes)} boxes, daemon for ${m.minutes} min (${m.cycles} cycles, /metrics scraped every 5 s; after GC):` +
      ` RSS ${f0(first?.rssMiB ?? NaN)} -> ${f0(last?.rssMiB ?? NaN)} MiB (max ${f0(Math.max(...m.samples.map((s) => s.rssMiB)))}),` +
      ` heap ${f0(first?.heapMiB ?? NaN)} -> ${f0(last?.heapMiB ?? NaN)} MiB; slope over the second half: RSS ${m.rssSlopeMiBPerHour.toFixed(1)} MiB/h,` +
      ` heap ${m.heapSlopeMiBPerHour.toFixed(1)} MiB/h | peak RSS ${f0(m.peakRssMiB)} MiB`,
  );
}

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    cycles: { type: 'string' },
    warmup: { type: 'string', default: '4' },
    'memory-minutes': { type: 'string', default: '2' },
    'memory-boxes': { type: 'string', default: '10000' },
    json: { type: 'string', default: 'bench/results/floor.json' },
    profile: { type: 'string' },
    // Internal: one part, in a child process (--marks: see measureSize).
    'child-size': { type: 'string' },
    'child-memory': { type: 'string' },
    'child-daemon': { type: 'string' },
    daemon: { type: 'string', default: '' },
    'daemon-http': { type: 'string', default: 'on' },
    'node-args': { type: 'string', default: '' },
    marks: { type: 'boolean', default: false },
    stages: { type: 'boolean', default: false },
  },
});
const cycles = values.cycles === undefined ? undefined : Number(values.cycles);
const warmup = Number(values.warmup);
if (values['child-size'] !== undefined) {
  const boxes = Number(values['child-size']);
  process.stdout.write(JSON.stringify(await measureSize(boxes, cycles ?? cyclesFor(boxes), warmup, values.profile, values.marks, values.stages)));
} else if (values['child-daemon'] !== undefined) {
  const boxes = Number(values['child-daemon']);
  process.stdout.write(JSON.stringify(await measureDaemon(boxes, cycles ?? cyclesFor(boxes), warmup, values['daemon-http'] !== 'off', values['node-args'].split(' ').filter((a) => a !== ''))));
} else if (values['child-memory'] !== undefined) {
  process.stdout.write(JSON.stringify(await measureMemory(Number(values['memory-boxes']), Number(values['child-memory']))));
} else {
  const sizes = values.sizes === '' ? [] : values.sizes.split(',').map(Number);
  const minutes = Number(values['memory-minutes']);
  const daemonSizes = values.daemon === '' ? [] : values.daemon.split(',').map(Number);
  if ([...sizes, ...daemonSizes].some((n) => !(n > 0)) || !(cycles === undefined || (cycles > 0 && cycles % 2 === 0)) || !(warmup >= 0 && warmup % 2 === 0) || !(minutes >= 0)) {
    throw new Error('--sizes and --memory-minutes must be positive numbers, --cycles and --warmup even ones');
  }
  const report: FloorReport = {
    date: new Date().toISOString(),
    machine: `${os.cpus()[0]?.model ?? 'unknown cpu'} x${os.cpus().length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
    loadAverage: os.loadavg(),
    settings: { concurrency: CONCURRENCY },
    sizes: [],
    daemon: [],
    memory: null,
  };
  // Written after each part, so that a long run that fails late keeps what it measured.
  const save = (): void => {
    mkdirSync(dirname(values.json), { recursive: true });
    writeFileSync(values.json, `${JSON.stringify(report, null, 1)}\n`);
  };
  for (const n of sizes) {
    const r = (await child(['--child-size', String(n), '--cycles', String(cycles ?? cyclesFor(n)), '--warmup', String(warmup), ...(values.profile === undefined ? [] : ['--profile', values.profile])])) as SizeResult;
    printSize(r);
    report.sizes.push(r);
    save();
  }
  for (const n of daemonSizes) {
    const r = (await child(['--child-daemon', String(n), '--cycles', String(cycles ?? cyclesFor(n)), '--warmup', String(warmup), '--daemon-http', values['daemon-http'], `--node-args=${values['node-args']}`])) as DaemonResult;
    printDaemon(r);
    report.daemon.push(r);
    save();
  }
  if (minutes > 0) {
    report.memory = (await child(['--child-memory', String(minutes), '--memory-boxes', values['memory-boxes']])) as MemoryResult;
    printMemory(report.memory);
    save();
  }
  console.log(`figures written to ${values.json} (plot: npm run bench:plot)`);
}
