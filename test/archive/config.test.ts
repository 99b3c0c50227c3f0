/**
 * The `archive:` section and the archive rules: defaults, every bad value named by its path, and
 * `boxwatch check-config` (the built executable) exiting 2 on one, and warning when replicas archive.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { parseConfig } from '../../src/config/index.js';
import { openStore } from '../../src/store/index.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { configProblems } from '../helpers/config-problems.js';

const ENV = { KEY: 'k-123' };
const BASE = 'gateway: { secret_key: "${KEY}" }\ncalls: {}\n';

const problems = (text: string): string[] => configProblems(text, ENV);

describe('archive configuration', () => {
  it('is off without an archive: section, and has the documented defaults with one', () => {
    expect(parseConfig(BASE, ENV).archive).toBeUndefined();
    expect(parseConfig(`${BASE}archive: {}\n`, ENV).archive).toEqual({
      dir: './data/recordings',
      retention: 90 * 86_400_000,
      concurrency: 4,
      maxSize: 256 * 1024 ** 2,
      allowHosts: [],
    });
    const set = parseConfig(`${BASE}archive: { dir: /srv/rec, retention: 30d, concurrency: 8, bandwidth: 4MiB, max_size: 64MiB, allow_hosts: [CDN.example.com, "10.0.0.5:9000"] }\n`, ENV).archive;
    expect(set).toEqual({ dir: '/srv/rec', retention: 30 * 86_400_000, concurrency: 8, bandwidth: 4 * 1024 ** 2, maxSize: 64 * 1024 ** 2, allowHosts: ['cdn.example.com', '10.0.0.5:9000'] });
  });

  it('names the field of every bad value', () => {
    expect(problems(`${BASE}archive: { concurrency: 0 }\n`)).toEqual(['archive.concurrency: must be at least 1']);
    expect(problems(`${BASE}archive: { retention: forever }\n`)[0]).toMatch(/^archive\.retention: invalid duration/);
    expect(problems(`${BASE}archive: { bandwidth: fast }\n`)[0]).toMatch(/^archive\.bandwidth: invalid size "fast"/);
    expect(problems(`${BASE}archive: { allow_hosts: ["https://cdn.example.com/x"] }\n`)[0]).toMatch(/^archive\.allow_hosts\[0\]: must be a host name/);
    expect(problems(`${BASE}archive: { dirr: /x }\n`)).toEqual(['archive.dirr: unknown key (did you mean "dir"?)']);
    expect(problems('gateway: { secret_key: "${KEY}" }\narchive: {}\n')).toEqual(['archive: needs a calls: section (recordings are found through the calls boxwatch reads)']);
    expect(problems(`${BASE}rules:\n  - { name: lost, kind: recording_lost, severity: warning }\n`)).toEqual(['rules[0].kind: recording_lost needs an archive: section']);
  });
});

describe('boxwatch check-config and recordings verify', () => {
  let dir = '';
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-config-'));
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 2 naming the bad archive field', async () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, `gateway: { secret_key: k }\ncalls: {}\narchive: { dir: ./rec, concurrency: many }\n`);
    const r = await runBuilt(['check-config', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('archive.concurrency');
  });

  it('warns (exit 0) that archive.dir must be shared by all replicas when the configuration has cluster: and archive:', async () => {
    const replicated = join(dir, 'replicated.yaml');
    writeFileSync(replicated, `gateway: { secret_key: k }\nstorage: { path: ${join(dir, 'r.db')} }\ncalls: {}\narchive: { dir: ./rec }\ncluster: { lease: 10s }\n`);
    const r = await runBuilt(['check-config', '--config', replicated]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^# warning: cluster: with archive: .*must be one storage shared by all replicas/m);
    const single = join(dir, 'single.yaml');
    writeFileSync(single, `gateway: { secret_key: k }\ncalls: {}\narchive: { dir: ./rec }\n`);
    const s = await runBuilt(['check-config', '--config', single]);
    expect(s.code).toBe(0);
    expect(s.out).not.toContain('# warning');
  });

  it('recordings verify: no directory is bad usage (exit 2); a database without the archive says so (exit 1)', async () => {
    const dbPath = join(dir, 'old.db');
    openStore(dbPath).close();
    const db = new Database(dbPath);
    db.exec('DROP TABLE recordings');
    db.close();
    const usage = await runBuilt(['recordings', 'verify', '--db', dbPath]);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/^error: no archive directory: give --dir, or a configuration with an archive: section\n/);
    const old = await runBuilt(['recordings', 'verify', '--db', dbPath, '--dir', dir]);
    expect(old.code).toBe(1);
    expect(old.err).toBe('error [archive_none]: this database has no recording archive (written by a boxwatch without it; the daemon upgrades it when it starts)\n');
  });
});
