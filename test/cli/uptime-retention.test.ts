/**
 * `boxwatch uptime --db FILE` (no configuration, so no `storage.raw_retention`) answers as the
 * daemon's own store does: which hours of a box are read raw does not depend on a raw retention
 * the CLI would have to guess. Before, the reads took the default 14 days for it: an account whose
 * latest cycle was 14 to `raw_retention` days old counted as no longer polled, and its boxes' last
 * hour was read from a rollup. A database written before removed accounts had their last hour
 * closed (session 8) has none for that hour, so `--db` reported such a box as never observed while
 * `--config` reported its last poll. The built CLI against a real SQLite file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, pruneGradually } from '../../src/store/index.js';
import type { UptimeRow } from '../../src/domain/store.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { HOUR, MINUTE, okCycle, snap } from '../store/model.js';

const DAY = 24 * HOUR;
const RAW_RETENTION = 30 * DAY;
let dir: string;
let dbPath: string;
let configPath: string;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-uptime-retention-'));
  dbPath = join(dir, 'boxwatch.db');
  configPath = join(dir, 'boxwatch.yaml');
  writeFileSync(configPath, `gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\nstorage: { path: "${dbPath}", raw_retention: 30d }\n`);
  // acme was polled once 20 days ago and then left the configuration, its hour left open; the
  // default account has been polled every 10 minutes since, up to a few minutes ago.
  const now = Math.floor(Date.now() / MINUTE) * MINUTE;
  const store = openStore(dbPath, { rawRetentionMs: RAW_RETENTION });
  const acme = okCycle(now - 20 * DAY, [snap('acme/BX-9')]);
  store.recordCycle({ ...acme, cycle: { ...acme.cycle, account: 'acme' } });
  let last = now - 20 * DAY;
  for (let t = last + HOUR; t <= now - 5 * MINUTE; t += 10 * MINUTE) store.recordCycle(okCycle((last = t), [snap('BX-1', { connected: Math.floor(t / HOUR) % 4 !== 0 })]));
  await pruneGradually(store, last + MINUTE, { rawMs: RAW_RETENTION, rollupMs: 400 * DAY });
  store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function uptime(...source: string[]): Promise<UptimeRow[]> {
  const r = await runBuilt(['uptime', '--since', '30d', '--format', 'json', ...source]);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as UptimeRow[];
}

it('uptime --db answers as with the configuration: a box of an account polled 20 days ago (raw retention 30 days) is observed from its last poll', async () => {
  const withConfig = await uptime('--config', configPath);
  expect(withConfig.find((r) => r.serial === 'acme/BX-9')).toMatchObject({ connectedFraction: 1 });
  expect(withConfig.find((r) => r.serial === 'acme/BX-9')?.observedMs).toBeGreaterThan(0);
  expect(withConfig.find((r) => r.serial === 'BX-1')?.connectedFraction).toBeCloseTo(0.75, 2);
  expect(await uptime('--db', dbPath)).toEqual(withConfig);
});
