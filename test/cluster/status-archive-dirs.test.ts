/**
 * `boxwatch status --db FILE` (the built CLI, a real SQLite file) says that archive.dir is not
 * shared while the live replicas' heartbeats announce different archive directories, live as the
 * daemons judge it (`--db` alone: the default lease, 30 s). A replica killed two minutes ago (no
 * leave, its row still naming its directory) is not live: the daemons' alert has ended, and status
 * says nothing (before: it took the longest lease, 10 minutes, and blamed the dead replica).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { runBuilt } from '../helpers/cli-process.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** `status --db` of a database whose replica-b last beat `bAgoMs` ago, replica-a a second ago, each announcing its own directory. */
async function statusWith(bAgoMs: number): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-status-archives-'));
  const db = join(dir, 'boxwatch.db');
  const store = openStore(db);
  const now = Date.now();
  store.leases.heartbeat({ id: 'replica-a', host: 'vm1', pid: 101, archive: 'vm1-77b2e410' }, now - 1_000);
  store.leases.heartbeat({ id: 'replica-b', host: 'vm2', pid: 202, archive: 'vm2-3f9a0c1d' }, now - bAgoMs);
  store.close();
  const status = await runBuilt(['status', '--db', db]);
  expect(status.code, status.err).toBe(0);
  return status.out;
}

it('two live replicas announcing two directories: status says archive.dir is not shared and names them', async () => {
  expect(await statusWith(2_000)).toContain('archive.dir not shared: the live replicas archive into 2 directories (replica-a: vm1-77b2e410, replica-b: vm2-3f9a0c1d); give them one shared archive.dir');
});

it('a replica killed two minutes ago (its row left behind): not live, status says nothing of it', async () => {
  expect(await statusWith(120_000)).not.toContain('archive.dir not shared');
});
