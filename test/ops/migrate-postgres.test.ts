/**
 * `boxwatch migrate` between a real SQLite file and a real PostgreSQL cluster (throwaway, Debian's
 * binaries), run as the built program: a whole database (history over an hour boundary, alert
 * state and transitions, silences, acks, queued items, the outbox, calls, test calls, recordings) goes to PostgreSQL and
 * reads back the same through the PostgreSQL store, then back into a new SQLite file that reads
 * the same as the original; counts are printed and verified; a non-empty target is refused
 * untouched; the URL's password never appears in the output, on success or failure.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { fill, firing, readBack, RULE, T0 } from '../helpers/filled-store.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { HOUR, MAX_GAP, okCycle, snap, tempDir } from '../store/model.js';

const PASSWORD = 'pw-Zq81-never-shown';

describeWithPostgres('boxwatch migrate (SQLite <-> PostgreSQL)', () => {
  let server: PostgresServer;
  const tmp = tempDir();
  beforeAll(async () => {
    await ensureBuilt();
    server = await PostgresServer.start();
  }, 120_000);
  afterAll(() => {
    server.stop();
    tmp.cleanup();
  });

  /** The cluster's URL for `db` with a password (trust authentication ignores it). */
  const withPassword = (url: string): string => url.replace('postgres@', `postgres:${PASSWORD}@`);

  it('copies a whole SQLite database to PostgreSQL and back; both read the same as the original, counts verified', async () => {
    const original = join(tmp.dir, 'original.db');
    const sqlite = openStore(original, { maxGapMs: MAX_GAP });
    fill(sqlite);
    const want = await readBack(sqlite);
    sqlite.close();

    const url = withPassword(await server.createDatabase('copy'));
    const there = await runBuilt(['migrate', '--from', `sqlite:${original}`, '--to', url], { timeoutMs: 60_000 });
    expect(there.err).toBe('');
    expect(there.code).toBe(0);
    expect(there.out).toContain(`copying sqlite:${original} to postgres://postgres@127.0.0.1:${server.port}/copy`);
    expect(there.out).toMatch(/^ {2}cycles +60 rows$/m);
    expect(there.out).toMatch(/^ {2}samples +\d+ rows$/m);
    expect(there.out).toMatch(/^ {2}alert_transitions +1 rows$/m);
    expect(there.out).toMatch(/^ {2}calls +3 rows$/m);
    expect(there.out).toMatch(/^ {2}recordings +1 rows$/m);
    expect(there.out).toMatch(/^ {2}test_calls +1 rows$/m);
    expect(there.out).toContain('every count verified');
    expect(there.out + there.err).not.toContain(PASSWORD);

    const pg = await PostgresStore.open(url, { maxGapMs: MAX_GAP });
    expect(await readBack(pg)).toEqual(want);
    // The copied ids go on: the next transition gets the next id, not a taken one.
    await pg.commitCycle(okCycle(T0 + HOUR, [snap('BX-001')]), T0 + HOUR, () => ({
      alerts: { states: new Map(), dropped: [firing('BX-002', T0).key], transitions: [{ ...firing('BX-002', T0), key: firing('BX-002', T0).key, kind: RULE.kind, from: 'firing', to: 'resolved', at: T0 + HOUR, value: 1, threshold: null, heldBack: null, heldBy: [] }], queued: [] },
      result: undefined,
    }));
    expect((await pg.alerts.transitionsSince(0)).map((t) => t.id)).toEqual([1, 2]);
    await pg.close();

    const back = join(tmp.dir, 'back.db');
    const home = await runBuilt(['migrate', '--from', url, '--to', `sqlite:${back}`], { timeoutMs: 60_000 });
    expect(home.err).toBe('');
    expect(home.code).toBe(0);
    expect(home.out).toMatch(/^ {2}cycles +61 rows$/m);
    expect(home.out + home.err).not.toContain(PASSWORD);
    const copy = openStore(back, { maxGapMs: MAX_GAP });
    const original2 = openStore(original, { maxGapMs: MAX_GAP });
    // Everything of the original is in the copy (which also has the cycle recorded on PostgreSQL).
    expect((await readBack(copy) as { battery: unknown }).battery).toEqual((want as { battery: unknown }).battery);
    expect((await copy.alerts.transitionsSince(0)).map((t) => [t.id, t.key, t.to])).toEqual([[1, firing('BX-002', T0).key, 'firing'], [2, firing('BX-002', T0).key, 'resolved']]);
    expect(copy.acks.latestByKey().get(firing('BX-002', T0).key)?.by).toBe('ana');
    expect(copy.calls.list({ limit: 10 })).toEqual(original2.calls.list({ limit: 10 }));
    copy.close();
    original2.close();
  });

  it('refuses a target that holds data, leaving it untouched, and an existing SQLite file', async () => {
    const original = join(tmp.dir, 'small.db');
    const sqlite = openStore(original, { maxGapMs: MAX_GAP });
    sqlite.recordCycle(okCycle(T0, [snap('BX-001')]));
    sqlite.close();
    const url = await server.createDatabase('busy');
    const pg = await PostgresStore.open(url);
    await pg.recordCycle(okCycle(T0 - HOUR, [snap('BX-900')]));
    const refused = await runBuilt(['migrate', '--from', `sqlite:${original}`, '--to', url], { timeoutMs: 60_000 });
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/migrate_target_not_empty.*not empty/);
    expect((await pg.boxes()).map((b) => b.serial)).toEqual(['BX-900']);
    await pg.close();

    const exists = await runBuilt(['migrate', '--from', url, '--to', `sqlite:${original}`], { timeoutMs: 60_000 });
    expect(exists.code).toBe(1);
    expect(exists.err).toContain('exists already');
    expect(existsSync(`${original}.partial-0`)).toBe(false);
  });

  it('never shows the password: not when the server is unreachable, not in a bad argument', async () => {
    const down = `postgres://postgres:${PASSWORD}@127.0.0.1:1/none`;
    const failed = await runBuilt(['migrate', '--from', `sqlite:${join(tmp.dir, 'none.db')}`, '--to', down], { timeoutMs: 60_000 });
    expect(failed.code).toBe(1);
    const failed2 = await runBuilt(['migrate', '--from', down, '--to', `sqlite:${join(tmp.dir, 'x.db')}`], { timeoutMs: 60_000 });
    expect(failed2.code).toBe(1);
    expect(failed2.err).toContain('store_unavailable');
    expect(failed2.err).toContain('postgres://postgres@127.0.0.1:1/none');
    const bad = await runBuilt(['migrate', '--from', `mysql://root:${PASSWORD}@host/db`, '--to', down], { timeoutMs: 60_000 });
    expect(bad.code).toBe(2);
    expect(bad.err.split('\n')[0]).toMatch(/^error: --from must be sqlite:FILE or a postgres:\/\/ URL/);
    for (const run of [failed, failed2, bad]) expect(run.out + run.err).not.toContain(PASSWORD);
    expect(existsSync(join(tmp.dir, 'x.db'))).toBe(false);
  });
});
