/**
 * The history queries on PostgreSQL beside SQLite, on the same data: the SQLite database built by
 * storage-query.bench (--db FILE keeps it) is copied into an empty PostgreSQL database with
 * `boxwatch migrate`'s copy, then the same queries run on both stores in this process, and the
 * PostgreSQL medians are printed with their ratio to SQLite's (the SQLite run is the baseline).
 *
 *   npm run build && node dist/bench/storage-query.bench.js --boxes 200 --days 30 --db /tmp/q.db
 *   node dist/bench/postgres-query.bench.js --db /tmp/q.db --days 30 --url postgres://user@host:port/empty_db
 *
 * Without --db and --url it says what it needs and exits 0 (npm run bench runs every bench).
 */
import { migrateDatabase } from '../src/cli/migrate-run.js';
import { openStore, type Store } from '../src/store/index.js';
import { PostgresStore } from '../src/store/postgres/index.js';
import { DAY, median, ms, rng } from './storage-helpers.js';

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const dbPath = option('db');
const url = option('url');
const DAYS = Number(option('days') ?? 90);
const END = Date.parse('2026-06-01T00:00:00Z'); // as storage-query.bench builds it
const START = END - DAYS * DAY;

/** The queries of storage-query.bench, each timed; the same picks (seeded) for both stores. */
async function measure(s: Pick<Store, 'history' | 'uptime' | 'valueAt'>, boxes: number): Promise<Record<string, number>> {
  const r = rng(7);
  const pick = (): string => `BX-${String(1 + Math.floor(r() * boxes)).padStart(5, '0')}`;
  const time = async (fn: () => unknown): Promise<number> => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const h24: number[] = [];
  const c24: number[] = [];
  const hLong: number[] = [];
  await time(() => s.history(pick(), 'signal', END - DAY, END)); // warm-up
  for (let i = 0; i < 30; i++) {
    h24.push(await time(() => s.history(pick(), 'signal', END - DAY, END)));
    hLong.push(await time(() => s.history(pick(), 'battery', START, END)));
    c24.push(await time(() => s.history(pick(), 'connected', END - DAY, END)));
  }
  const up: number[] = [];
  for (let i = 0; i < 5; i++) up.push(await time(() => s.uptime(END - Math.min(30, DAYS) * DAY - 17 * 60_000, END)));
  const va: number[] = [];
  for (let i = 0; i < 200; i++) va.push(await time(() => s.valueAt(pick(), 'battery', START + Math.floor(r() * (END - START)))));
  return {
    'history 24 h, signal (raw)': median(h24),
    'history 24 h, connected (raw)': median(c24),
    [`history ${DAYS} d, battery (rollups)`]: median(hLong),
    [`uptime ${Math.min(30, DAYS)} d, all boxes`]: median(up),
    'valueAt at a random time': median(va),
  };
}

if (dbPath === undefined || url === undefined) {
  console.log('postgres-query: needs --db FILE (built by storage-query.bench --db FILE) and --url postgres://... (an empty database); skipped');
} else {
  const sqlite = openStore(dbPath, { readonly: true });
  const boxes = sqlite.boxes().length;
  const pg0 = await PostgresStore.open(url);
  const copied = (await pg0.boxes()).length > 0;
  await pg0.close();
  if (!copied) {
    const t0 = performance.now();
    const report = await migrateDatabase({ kind: 'sqlite', path: dbPath }, { kind: 'postgres', url });
    console.log(`copied into PostgreSQL in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${report.tables.reduce((n, t) => n + t.rows, 0)} rows`);
  }
  const pg = await PostgresStore.open(url);
  console.log(`\n### queries on ${boxes} boxes × ${DAYS} days: PostgreSQL beside SQLite (same data, same process; SQLite is the baseline)`);
  const base = await measure(sqlite, boxes);
  const other = await measure(pg, boxes);
  console.log('| query | SQLite median | PostgreSQL median | PostgreSQL / SQLite |');
  console.log('|---|---|---|---|');
  for (const [name, value] of Object.entries(base)) {
    const p = other[name] as number;
    console.log(`| ${name} | ${ms(value)} | ${ms(p)} | ${(p / value).toFixed(1)}× |`);
  }
  sqlite.close();
  await pg.close();
}
