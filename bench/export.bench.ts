/**
 * `boxwatch export` at growing sizes: does its memory stay flat (issue 14)? For each size a
 * database of N boxes × D days is built directly (bench/history-db.ts), then the built CLI runs
 * `boxwatch export --db FILE --format F` as a child process whose stdout is drained and counted
 * here (bytes and lines, nothing kept). The child's VmRSS and VmHWM are read from
 * /proc/<pid>/status every 150 ms (VmHWM, the kernel's peak, is the figure to read; the last
 * sample is at most 150 ms before the child exits), its CPU time from /proc/<pid>/stat. With
 * `--out FILE` the child's stdout is free, so that run also has V8's --trace-gc: the heap still in
 * use after each full collection (the live set; RSS also holds the garbage not yet collected,
 * SQLite's page cache and the node binary).
 *
 *   npm run build && node dist/bench/export.bench.js [--boxes N --days D] [--sizes 100x9,1000x30]
 *     [--formats csv,jsonl,openmetrics] [--out csv] [--db-dir DIR] [--export-boxes GLOB] [--from ISO]
 *
 * Sizes: the list of `--sizes` (default 100x9 and 1000x30), and N×D when --boxes/--days are given.
 * `--out F` also runs format F with `--out FILE` (next to the database; the file is deleted after).
 * `--db-dir DIR` keeps the databases there (b<N>-d<D>.db) and reuses them on the next run.
 * `--export-boxes GLOB` and `--from ISO` are passed to the export as --boxes and --from (the built
 * history ends at 2026-06-01T00:00Z, before today: --since would find none of it).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildHistoryDb } from './history-db.js';
import { tempDb } from './storage-helpers.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
const END = Date.parse('2026-06-01T00:00:00Z');
const SAMPLE_MS = 150;
const CLOCK_TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

function text(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

interface Size {
  boxes: number;
  days: number;
}

function sizes(): Size[] {
  const list = (text('sizes') ?? '100x9,1000x30').split(',').map((s) => {
    const [boxes, days] = s.split('x').map(Number);
    return { boxes: boxes ?? NaN, days: days ?? NaN };
  });
  const boxes = text('boxes');
  const days = text('days');
  if (boxes !== undefined || days !== undefined) list.push({ boxes: Number(boxes ?? 1000), days: Number(days ?? 90) });
  for (const s of list) if (!(s.boxes > 0 && s.days > 0)) throw new Error(`bad size ${JSON.stringify(s)}`);
  return list.filter((s, i) => list.findIndex((o) => o.boxes === s.boxes && o.days === s.days) === i);
}

interface Memory {
  rssKb: number;
  hwmKb: number;
  cpuS: number;
}

/** The child's memory and CPU time so far; null once it is gone. */
function readProc(pid: number): Memory | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    // Fields after the command name (which is in parentheses): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuS = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    const rssKb = kb('VmRSS');
    return Number.isNaN(rssKb) ? null : { rssKb, hwmKb: kb('VmHWM'), cpuS }; // a zombie has no VmRSS
  } catch {
    return null;
  }
}

interface Run {
  bytes: number;
  lines: number;
  wallS: number;
  cpuS: number;
  peakRssKb: number;
  hwmKb: number;
  /** The highest VmRSS of the first and of the last 10 % of the run's samples: flat when equal. */
  earlyRssKb: number;
  lateRssKb: number;
  /** With --out: the most heap in use after a full collection (MB, V8's --trace-gc), how many there were, the most heap V8 held. */
  liveHeapMb?: number;
  fullGcs?: number;
  committedHeapMb?: number;
}

/** `[pid:addr]  1234 ms: Mark-Compact 47.9 (72.0) -> 16.3 (59.4) MB, ...`: the heap in use after it. */
const FULL_GC = /Mark-Compact [\d.]+ \([\d.]+\) -> ([\d.]+) \(/;
/** Any collection's line: the heap V8 held (committed) before and after it. */
const ANY_GC = /: \S+ [\d.]+ \(([\d.]+)\) -> [\d.]+ \(([\d.]+)\) MB/;

async function runExport(db: string, format: string, extra: string[]): Promise<Run> {
  const began = performance.now();
  const toFile = extra.includes('--out');
  const child = spawn(process.execPath, [...(toFile ? ['--trace-gc'] : []), MAIN, 'export', '--db', db, '--format', format, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  let bytes = 0;
  let lines = 0;
  let trace = '';
  child.stdout.on('data', (chunk: Buffer) => {
    if (toFile) trace += chunk.toString();
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
  });
  const samples: Memory[] = [];
  const timer = setInterval(() => {
    const m = child.pid === undefined ? null : readProc(child.pid);
    if (m !== null) samples.push(m);
  }, SAMPLE_MS);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  clearInterval(timer);
  if (code !== 0) throw new Error(`export --format ${format} exited with ${code}`);
  const traceLines = trace.split('\n');
  const fullGcs = traceLines.flatMap((line) => FULL_GC.exec(line)?.[1] ?? []).map(Number);
  const committed = traceLines.flatMap((line) => ANY_GC.exec(line)?.slice(1) ?? []).map(Number);
  const tenth = Math.max(1, Math.floor(samples.length / 10));
  const maxRss = (ms: Memory[]): number => Math.max(0, ...ms.map((m) => m.rssKb));
  return {
    bytes,
    lines,
    wallS: (performance.now() - began) / 1000,
    cpuS: samples.at(-1)?.cpuS ?? NaN,
    peakRssKb: maxRss(samples),
    hwmKb: samples.at(-1)?.hwmKb ?? NaN,
    earlyRssKb: maxRss(samples.slice(0, tenth)),
    lateRssKb: maxRss(samples.slice(-tenth)),
    ...(toFile ? { liveHeapMb: fullGcs.reduce((a, b) => Math.max(a, b), 0), fullGcs: fullGcs.length, committedHeapMb: committed.reduce((a, b) => Math.max(a, b), 0) } : {}),
  };
}

const mib = (kb: number): string => `${(kb / 1024).toFixed(0)} MiB`;
const big = (n: number): string => n.toLocaleString('en-US');

function report(label: string, r: Run): void {
  console.log(
    `${label.padEnd(12)} ${big(r.lines).padStart(14)} lines ${(r.bytes / 2 ** 20).toFixed(0).padStart(8)} MiB ` +
      `wall ${r.wallS.toFixed(1).padStart(7)} s CPU ${r.cpuS.toFixed(1).padStart(7)} s ` +
      `${((r.bytes / 2 ** 20) / r.wallS).toFixed(0).padStart(4)} MiB/s ${big(Math.round(r.lines / r.wallS)).padStart(11)} lines/s  ` +
      `peak RSS ${mib(r.hwmKb)} (sampled ${mib(r.peakRssKb)}; first/last tenth ${mib(r.earlyRssKb)}/${mib(r.lateRssKb)})` +
      (r.liveHeapMb === undefined ? '' : `; live heap after full GCs at most ${r.liveHeapMb.toFixed(1)} MB (${r.fullGcs} full GCs), V8 heap held at most ${r.committedHeapMb?.toFixed(1)} MB`),
  );
}

const formats = (text('formats') ?? 'csv,jsonl,openmetrics').split(',').filter((f) => f !== '');
const outFormat = text('out');
const extra = [...(text('export-boxes') === undefined ? [] : ['--boxes', text('export-boxes') as string]), ...(text('from') === undefined ? [] : ['--from', text('from') as string])];
const dbDir = text('db-dir');
const temp = dbDir === undefined ? tempDb('x') : undefined;
const dir = dbDir ?? dirname(temp?.path as string);
mkdirSync(dir, { recursive: true });

console.log(`\n### boxwatch export: the child's memory by size (30 s schedule, database built directly${extra.length > 0 ? `; export ${extra.join(' ')}` : ''})`);
for (const size of sizes()) {
  const db = join(dir, `b${size.boxes}-d${size.days}.db`);
  if (existsSync(db)) {
    console.log(`\n${big(size.boxes)} boxes × ${size.days} days: ${db} (reused, ${(statSync(db).size / 2 ** 20).toFixed(0)} MiB)`);
  } else {
    const built = buildHistoryDb(db, { ...size, end: END });
    console.log(`\n${big(size.boxes)} boxes × ${size.days} days: built in ${built.buildS.toFixed(1)} s, ${(built.bytes / 2 ** 20).toFixed(0)} MiB`);
  }
  const lines = new Map<string, number>();
  for (const format of formats) {
    const r = await runExport(db, format, extra);
    lines.set(format, r.lines);
    report(format, r);
  }
  if (outFormat !== undefined) {
    const file = join(dir, `export-${process.pid}.${outFormat}`); // a name of its own: benches may share the directory
    const r = await runExport(db, outFormat, [...extra, '--out', file]);
    r.bytes = statSync(file).size;
    r.lines = lines.get(outFormat) ?? NaN; // the file is not read back; the same lines as on stdout
    rmSync(file);
    report(`${outFormat} --out`, r);
  }
}
temp?.cleanup();
