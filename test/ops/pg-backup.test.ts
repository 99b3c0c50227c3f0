/**
 * Backing up a PostgreSQL store as docs/operations.md says: `pg_dump --format=custom` of a
 * boxwatch database, `pg_restore --no-owner` into a fresh database, and the restored database read
 * through the PostgreSQL store answers the same history, alerts, silences, acks, outbox and calls
 * as the original; it opens without migrating again and goes on (the next alert transition gets
 * the next id). Real throwaway cluster and Debian's pg_dump/pg_restore of the same version.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrateDatabase } from '../../src/cli/migrate-run.js';
import { openStore } from '../../src/store/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { fill, firing, readBack, RULE, T0 } from '../helpers/filled-store.js';
import { describeWithPostgres, findPostgres, PostgresServer } from '../helpers/postgres.js';
import { HOUR, MAX_GAP, okCycle, snap, tempDir } from '../store/model.js';

const run = promisify(execFile);

describeWithPostgres('backing up PostgreSQL with pg_dump and pg_restore', () => {
  let server: PostgresServer;
  const tmp = tempDir();
  beforeAll(async () => {
    server = await PostgresServer.start();
  }, 120_000);
  afterAll(() => {
    server.stop();
    tmp.cleanup();
  });

  it('a dump restored into a fresh database reads the same history and alerts through the store, and the restored store goes on', async () => {
    const bin = findPostgres();
    if (bin === undefined) throw new Error('PostgreSQL is not installed');
    // A boxwatch PostgreSQL database: a whole database moved there with `boxwatch migrate`'s copy,
    // then a cycle the PostgreSQL store recorded itself (the alert resolves).
    const sqlitePath = join(tmp.dir, 'original.db');
    const sqlite = openStore(sqlitePath, { maxGapMs: MAX_GAP });
    fill(sqlite);
    sqlite.close();
    const live = await server.createDatabase('live');
    await migrateDatabase({ kind: 'sqlite', path: sqlitePath }, { kind: 'postgres', url: live });
    const original = await PostgresStore.open(live, { maxGapMs: MAX_GAP });
    const a = firing('BX-002', T0);
    await original.commitCycle(okCycle(T0 + HOUR, [snap('BX-001'), snap('BX-002')]), T0 + HOUR, () => ({
      alerts: { states: new Map(), dropped: [a.key], transitions: [{ ...a, kind: RULE.kind, from: 'firing', to: 'resolved', at: T0 + HOUR, value: 1, threshold: null, heldBack: null, heldBy: [] }], queued: [] },
      result: undefined,
    }));
    const want = await readBack(original);
    expect((want as { transitions: unknown[] }).transitions).toHaveLength(2);

    const dump = join(tmp.dir, 'boxwatch.dump');
    await run(bin.pgDump, ['--format=custom', '--file', dump, live]);
    await original.close();
    const fresh = await server.createDatabase('restored');
    await run(bin.pgRestore, ['--no-owner', '--exit-on-error', '--dbname', fresh, dump]);

    const restored = await PostgresStore.open(fresh, { maxGapMs: MAX_GAP });
    expect(await readBack(restored)).toEqual(want);
    // The restored database is a working store: the next transition gets the next id, not a taken one.
    await restored.commitCycle(okCycle(T0 + 2 * HOUR, [snap('BX-001')]), T0 + 2 * HOUR, () => ({
      alerts: { states: new Map(), dropped: [], transitions: [{ ...a, kind: RULE.kind, from: 'inactive', to: 'firing', at: T0 + 2 * HOUR, value: 0, threshold: null, heldBack: null, heldBy: [] }], queued: [] },
      result: undefined,
    }));
    expect((await restored.alerts.transitionsSince(0)).map((t) => [t.id, t.to])).toEqual([
      [1, 'firing'],
      [2, 'resolved'],
      [3, 'firing'],
    ]);
    expect((await restored.lastCycle())?.startedAt).toBe(T0 + 2 * HOUR);
    await restored.close();
  });
});
