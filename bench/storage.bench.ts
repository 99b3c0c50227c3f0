/**
 * Storage benchmark: (1) bytes on disk per box per day at a 30 s schedule, with the simulator's
 * fleet dynamics (src/sim/fleet.ts) over a simulated week, samples and rollups separately;
 * (2) recordCycle time for 1,000 and 10,000 boxes: first cycle, steady state, hour rollover;
 * (3) the same samples in Prometheus's TSDB: the store of (1) exported as OpenMetrics (`boxwatch
 * export --format openmetrics`: one sample per poll and series, as Prometheus would have scraped
 * them) and backfilled with Debian's promtool (`promtool tsdb create-blocks-from openmetrics`,
 * package `prometheus`); skipped, with a message, when promtool is not installed;
 * (4) with `--url postgres://...` (an empty database): the same store copied into PostgreSQL with
 * `boxwatch migrate`'s copy, and the bytes per box per day of each table (indexes included) and of
 * the whole database on both, beside each other.
 *
 *   npm run build && node dist/bench/storage.bench.js [--boxes 100] [--days 3] [--no-cycles] [--no-prometheus] [--url postgres://...]
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { migrateDatabase } from '../src/cli/migrate-run.js';
import { exportHistory } from '../src/export/export.js';
import { storedSpan } from '../src/export/points.js';
import { streamSink } from '../src/export/sink.js';
import { openStore } from '../src/store/index.js';
import { METRICS } from '../src/domain/store.js';
import { DAY, FleetFeed, HOUR, POLL_MS, median, ms, percentile, pgQuery, tableBytes, tempDb } from './storage-helpers.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const START = Date.parse('2026-03-02T00:00:00Z');

const PROMTOOL = '/usr/bin/promtool';

/** Bytes of the files under a folder. */
function folderBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, entry.name);
    total += entry.isDirectory() ? folderBytes(p) : statSync(p).size;
  }
  return total;
}

/**
 * The samples of the store at `dbPath` exported as OpenMetrics and backfilled into a TSDB by
 * promtool; returns the TSDB's bytes on disk and the samples exported, or null without promtool.
 */
async function prometheusBytes(dbPath: string): Promise<{ bytes: number; samples: number; exportBytes: number; seconds: number } | null> {
  if (!existsSync(PROMTOOL)) {
    console.log(`prometheus: skipped, ${PROMTOOL} not found (Debian package prometheus)`);
    return null;
  }
  const began = performance.now();
  const store = openStore(dbPath, { readonly: true });
  const span = storedSpan(store);
  if (span === null) throw new Error('nothing stored to export');
  const file = join(dirname(dbPath), 'export.om');
  const out = createWriteStream(file);
  const summary = await exportHistory(store, { span, boxes: '*', metrics: METRICS, format: 'openmetrics' }, streamSink(out));
  out.end();
  await once(out, 'finish');
  store.close();
  const tsdb = join(dirname(dbPath), 'tsdb');
  execFileSync(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', '--quiet', file, tsdb], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { bytes: folderBytes(tsdb), samples: summary.lines, exportBytes: statSync(file).size, seconds: (performance.now() - began) / 1000 };
}

/**
 * The SQLite store at `dbPath` (after VACUUM) copied into the empty PostgreSQL database `url`
 * (then VACUUM ANALYZE): bytes per box per day of each history table with its indexes, and of
 * the whole database (PostgreSQL: what the copy added to the empty database), on both.
 */
async function postgresBytes(dbPath: string, url: string, boxes: number, days: number): Promise<void> {
  const dbSize = async (): Promise<number> => Number((await pgQuery<{ n: string }>(url, 'SELECT pg_database_size(current_database()) AS n'))[0]?.n);
  const empty = await dbSize();
  const t0 = performance.now();
  await migrateDatabase({ kind: 'sqlite', path: dbPath }, { kind: 'postgres', url });
  const copySeconds = (performance.now() - t0) / 1000;
  await pgQuery(url, 'VACUUM ANALYZE');
  const pgTables = new Map(
    (await pgQuery<{ name: string; n: string }>(url, "SELECT relname AS name, pg_total_relation_size(oid) AS n FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")).map((r) => [r.name, Number(r.n)]),
  );
  const raw = new Database(dbPath, { readonly: true });
  const sqliteTables = new Map(
    (raw.prepare('SELECT m.tbl_name AS name, sum(d.pgsize) AS n FROM dbstat d JOIN sqlite_master m ON m.name = d.name GROUP BY m.tbl_name').all() as { name: string; n: number }[]).map((r) => [r.name, r.n]),
  );
  raw.close();
  const kb = (b: number): string => `${(b / boxes / days / 1024).toFixed(2)} KB`;
  const pgAll = (await dbSize()) - empty;
  const sqliteAll = statSync(dbPath).size;
  console.log(`\n### the same history on PostgreSQL (copied in ${copySeconds.toFixed(1)} s, then VACUUM ANALYZE): bytes per box per day, indexes included`);
  console.log('| table | SQLite | PostgreSQL | PostgreSQL / SQLite |');
  console.log('|---|---|---|---|');
  for (const name of ['samples', 'rollups', 'cycles', 'boxes']) {
    const a = sqliteTables.get(name) ?? 0;
    const b = pgTables.get(name) ?? 0;
    console.log(`| ${name} | ${kb(a)} | ${kb(b)} | ${(b / a).toFixed(1)}× |`);
  }
  console.log(`| whole database | ${kb(sqliteAll)} (file) | ${kb(pgAll)} (growth of pg_database_size) | ${(pgAll / sqliteAll).toFixed(1)}× |`);
}

async function sizeBench(boxes: number, days: number, url: string | undefined): Promise<void> {
  const db = tempDb('size.db');
  const store = openStore(db.path);
  const feed = new FleetFeed(boxes, START);
  const cycles = Math.round((days * DAY) / POLL_MS);
  const began = performance.now();
  let recordMs = 0;
  for (let k = 0; k < cycles; k++) {
    const write = feed.cycle(START + k * POLL_MS);
    const t0 = performance.now();
    store.recordCycle(write);
    recordMs += performance.now() - t0;
  }
  store.close();
  const raw = new Database(db.path);
  raw.exec('VACUUM');
  const bytes = tableBytes(raw);
  const counts = raw.prepare('SELECT (SELECT count(*) FROM samples) AS samples, (SELECT count(*) FROM rollups) AS rollups, (SELECT avg(length(data)) FROM samples) AS blob').get() as { samples: number; rollups: number; blob: number };
  raw.close();
  const perBoxDay = (b: number): string => `${(b / boxes / days / 1024).toFixed(2)} KB`;
  const samples = bytes.get('samples') ?? 0;
  const rollups = bytes.get('rollups') ?? 0;
  const cyclesB = bytes.get('cycles') ?? 0;
  const file = statSync(db.path).size;
  console.log(`\n### bytes on disk: ${boxes} boxes, ${days} simulated days at a 30 s schedule (src/sim/fleet.ts Fleet, details every 5 min)`);
  console.log(`simulated in ${((performance.now() - began) / 1000).toFixed(1)} s (recordCycle total ${(recordMs / 1000).toFixed(1)} s, ${ms(recordMs / cycles)} per cycle)`);
  console.log(`samples : ${perBoxDay(samples)} per box per day (${counts.samples} rows, mean blob ${counts.blob.toFixed(0)} B)`);
  console.log(`rollups : ${perBoxDay(rollups)} per box per day (${counts.rollups} rows)`);
  console.log(`cycles  : ${perBoxDay(cyclesB)} per box per day (shared by the fleet)`);
  console.log(`file    : ${perBoxDay(file)} per box per day in all (${(file / 2 ** 20).toFixed(1)} MiB after VACUUM, boxes table and indexes included)`);
  const prom = process.argv.includes('--no-prometheus') ? null : await prometheusBytes(db.path);
  if (prom !== null) {
    console.log(
      `prometheus: ${perBoxDay(prom.bytes)} per box per day (TSDB of 2 h blocks as promtool writes them, ${prom.samples.toLocaleString('en-US')} samples` +
        ` from ${(prom.exportBytes / 2 ** 20).toFixed(0)} MiB of OpenMetrics; export and backfill ${prom.seconds.toFixed(0)} s)`,
    );
    console.log(`ratio   : Prometheus / boxwatch = ${(prom.bytes / file).toFixed(1)}x (whole file), ${(prom.bytes / samples).toFixed(1)}x (samples alone)`);
  }
  if (url !== undefined) await postgresBytes(db.path, url, boxes, days);
  db.cleanup();
}

function cycleBench(boxes: number): void {
  const db = tempDb('cycles.db');
  const store = openStore(db.path);
  // Start 20 minutes before an hour so that the run includes an hour rollover.
  const start = START + 10 * DAY + HOUR - 20 * 60_000;
  const feed = new FleetFeed(boxes, start - POLL_MS, 2);
  const steady: number[] = [];
  const cpu: number[] = [];
  let first = 0;
  let rollover = 0;
  const n = 80;
  for (let k = 0; k < n; k++) {
    const t = start + k * POLL_MS;
    const write = feed.cycle(t);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    store.recordCycle(write);
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    if (k === 0) first = wall;
    else if (Math.floor(t / HOUR) !== Math.floor((t - POLL_MS) / HOUR)) rollover = wall;
    else {
      steady.push(wall);
      cpu.push((c.user + c.system) / 1000);
    }
  }
  store.close();
  console.log(
    `${String(boxes).padStart(6)} boxes: first cycle ${ms(first)}; steady state median ${ms(median(steady))}, p95 ${ms(percentile(steady, 95))}, CPU median ${ms(median(cpu))}; hour rollover cycle ${ms(rollover)}`,
  );
  db.cleanup();
}

const boxes = arg('boxes', 100);
const days = arg('days', 3);
if (!process.argv.includes('--no-cycles')) {
  console.log('\n### recordCycle (one transaction per cycle; fleet model time excluded)');
  cycleBench(1_000);
  cycleBench(10_000);
}
const urlAt = process.argv.indexOf('--url');
await sizeBench(boxes, days, urlAt >= 0 ? process.argv[urlAt + 1] : undefined);
