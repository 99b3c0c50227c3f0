/**
 * Reliability: the database. Locked by another process (shorter and longer than busy_timeout),
 * full (SQLite's max_page_count on the daemon's connection stands in for a full disk), and a file
 * that is not a usable boxwatch database given to `boxwatch run`.
 *
 * What boxwatch does: a cycle whose transaction cannot be written is dropped whole (the cycle,
 * its samples, its alert transitions and its notifications roll back together), logged with the
 * SQLite code and counted as a failed cycle; the daemon keeps polling and the next cycle that can
 * write stores the fleet as it is then, so no alert is lost, only the dropped cycle's samples.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allCommands } from '../../src/cli/index.js';
import { runCli } from '../../src/cli/program.js';
import { createNotifier, Dispatcher } from '../../src/notify/index.js';
import { testMessage } from '../../src/notify/test-message.js';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver } from '../helpers/slack-receiver.js';
import { startRig, subjects, type Rig } from './rig.js';
import { connectionOf } from '../helpers/sqlite.js';
import { lockFromAnotherProcess } from '../helpers/sqlite-processes.js';
import type { NotificationMessage, Notifier } from '../../src/domain/notifications.js';
import { until } from '../helpers/wait.js';

let rig: Rig | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) c();
  await rig?.close();
  rig = undefined;
});

/** Log records of the daemon with this message. */
const logged = (r: Rig, msg: string): Rig['logs'] => r.logs.filter((l) => l.msg === msg);
const failedCycles = async (r: Rig): Promise<number> => {
  const m = /boxwatch_poll_cycles_total\{outcome="failed"\} (\d+)/.exec(await r.app.metrics.text());
  return m ? Number(m[1]) : 0;
};

describe('database locked by another process', () => {
  it('for less than busy_timeout: the cycle waits for the lock and is stored', async () => {
    rig = await startRig();
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[2]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });

    const lock = await lockFromAnotherProcess(rig.dbPath, 700);
    cleanups.push(lock.kill);
    await rig.cycle(); // blocks in SQLite's busy handler until the other process commits
    expect(await lock.exited).toBe(0);

    expect(rig.cycles()).toEqual(['ok', 'ok']);
    expect(rig.transitions()).toEqual([`box-offline:${box.serial}:firing`]);
    expect(subjects(rig)).toEqual([expect.stringContaining(box.serial)]);
    expect(rig.logs.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('for longer: the cycle is dropped (logged, counted), the daemon keeps going and the next cycle catches up', async () => {
    rig = await startRig();
    await rig.cycle(0);
    // Stand-in for a lock held longer than the 5 s busy_timeout: a shorter timeout on the daemon's
    // connection and a lock that this test releases when it wants.
    connectionOf(rig.app.store).pragma('busy_timeout = 100');
    const other = new Database(rig.dbPath);
    cleanups.push(() => other.close());
    other.exec('BEGIN EXCLUSIVE');
    const box = rig.sim.sim.fleet.boxes[4]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });

    await rig.cycle();
    const droppedAt = rig.clock.now();
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok']); // nothing of the two cycles was written...
    expect(logged(rig, 'poll cycle could not be stored; its data is dropped and the next cycle tries again')).toEqual([
      expect.objectContaining({ code: 'SQLITE_BUSY' }),
      expect.objectContaining({ code: 'SQLITE_BUSY' }),
    ]);
    expect(await failedCycles(rig)).toBe(2); // ...but both are counted
    expect(rig.smtp.messages).toHaveLength(0);

    other.exec('COMMIT');
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'ok']);
    // The alert the dropped cycles would have raised is raised now, once, and delivered.
    expect(rig.transitions()).toEqual([`box-offline:${box.serial}:firing`]);
    expect(subjects(rig)).toEqual([expect.stringContaining(box.serial)]);
    expect(rig.slack.received).toHaveLength(1);
    // 90 s between two stored polls is within the allowed gap: the history has no hole.
    expect(rig.app.store.valueAt(box.serial, 'connected', droppedAt)).toBeDefined();
  });
});

describe('database locked while alerts move to the outbox', () => {
  it('the grouped alerts wait in their queue (logged), and go out once the lock is gone', async () => {
    rig = await startRig({ yaml: 'rules: [{ name: box-offline, kind: disconnected, severity: critical }]\nalerting: { group_wait: 20s }' });
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[6]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle(); // the alert is committed; its notifications wait out group_wait in their queue
    expect(rig.transitions()).toEqual([`box-offline:${box.serial}:firing`]);
    connectionOf(rig.app.store).pragma('busy_timeout = 100');
    const other = new Database(rig.dbPath);
    cleanups.push(() => other.close());
    other.exec('BEGIN EXCLUSIVE');

    rig.clock.advance(20_000);
    await rig.app.deliverNow(); // moving the queue to the outbox fails: logged, not thrown
    expect(logged(rig, 'cannot move grouped alerts to the outbox; will retry')).toEqual([expect.objectContaining({ code: 'SQLITE_BUSY' })]);
    expect(rig.smtp.messages).toHaveLength(0);

    other.exec('COMMIT');
    await rig.app.deliverNow();
    expect(subjects(rig)).toEqual([expect.stringContaining(box.serial)]);
    expect(rig.slack.received).toHaveLength(1);
  });
});

describe('database locked while a delivery is recorded', () => {
  it('the dispatcher remembers the send, sends nothing more while the database refuses, and records it once writes work again: one copy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-rel-outbox-'));
    const slack = await startSlackReceiver();
    const clock = new FakeClock('2026-03-01T12:00:00Z');
    const store = openStore(join(dir, 'boxwatch.db'), { clock });
    const alerts = store.outbox<NotificationMessage>();
    const other = new Database(join(dir, 'boxwatch.db'));
    // Another process takes the database right after the first send, before it can be recorded.
    const slackNotifier = createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slack.url });
    let sends = 0;
    const notifier: Notifier = {
      name: slackNotifier.name,
      type: slackNotifier.type,
      send: async (message, signal) => {
        await slackNotifier.send(message, signal);
        if (++sends === 1) other.exec('BEGIN EXCLUSIVE');
      },
    };
    const dispatcher = new Dispatcher({ notifiers: [notifier], queue: alerts, clock, pollIntervalMs: 5_000, sendTimeoutMs: 10_000, batchSize: 5 });
    cleanups.push(() => {
      other.close();
      store.close();
      void slack.close();
      rmSync(dir, { recursive: true, force: true });
    });
    alerts.enqueue('ops-slack', testMessage(clock.now()), clock.now());
    connectionOf(store).pragma('busy_timeout = 50'); // a lock held longer than busy_timeout, quickly

    dispatcher.start();
    await slack.waitFor(1); // sent, but "delivered" cannot be written
    // The loop goes back to waiting a poll interval (a runaway loop would re-send every busy_timeout instead).
    await until('the dispatcher waits for its next pass', () => clock.sleeping === 1);
    expect(slack.requests).toHaveLength(1);
    expect(alerts.stats()).toEqual([expect.objectContaining({ notifier: 'ops-slack', pending: 1 })]);

    // Still refused a poll interval later: nothing is sent, the send stays remembered.
    clock.advance(5_000);
    await until('the dispatcher waits again after that pass', () => clock.sleeping === 1);
    expect(slack.requests).toHaveLength(1);

    other.exec('COMMIT');
    clock.advance(5_000); // the next pass records the remembered delivery before anything else
    await expect.poll(() => alerts.stats()).toEqual([expect.objectContaining({ notifier: 'ops-slack', pending: 0, delivered: 1 })]);
    clock.advance(5 * 10_000 + 60_000); // long after the claim's lease: still one copy
    await until('the dispatcher waits again after that pass', () => clock.sleeping === 1);
    await dispatcher.stop();
    expect(slack.requests).toHaveLength(1);
  });
});

describe('disk full', () => {
  it('writes fail with SQLITE_FULL: logged and counted, no crash; everything resumes when space returns', async () => {
    rig = await startRig();
    await rig.cycle(0);
    const db = connectionOf(rig.app.store);
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages}`); // the database may not grow any more
    // Poll until the free room in the file's pages is used up (a few dozen cycles).
    let cycles = 0;
    while (logged(rig, 'poll cycle could not be stored; its data is dropped and the next cycle tries again').length === 0) {
      await rig.cycle();
      cycles += 1;
      expect(cycles).toBeLessThan(500);
    }
    const stored = rig.cycles().length;
    expect(logged(rig, 'poll cycle could not be stored; its data is dropped and the next cycle tries again')[0]).toMatchObject({ code: 'SQLITE_FULL' });

    // While full, a box goes down: the daemon keeps polling, nothing is stored and nothing is sent.
    const box = rig.sim.sim.fleet.boxes[1]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    await rig.cycle();
    expect(rig.cycles()).toHaveLength(stored);
    expect(await failedCycles(rig)).toBe(3);
    expect(rig.smtp.messages).toHaveLength(0);

    db.pragma('max_page_count = 1073741823'); // space is back
    await rig.cycle();
    expect(rig.cycles()).toHaveLength(stored + 1);
    expect(rig.cycles().at(-1)).toBe('ok');
    expect(rig.transitions()).toEqual([`box-offline:${box.serial}:firing`]);
    expect(subjects(rig)).toEqual([expect.stringContaining(box.serial)]);
    expect(rig.slack.received).toHaveLength(1);
  });
});

describe('the -wal file deleted under the running daemon', () => {
  it('the daemon says once what to do and keeps polling; a read command names the cause and the fix instead of "disk I/O error"', async () => {
    rig = await startRig();
    await rig.cycle(0);
    rmSync(`${rig.dbPath}-wal`);
    await rig.cycle();
    await rig.cycle();
    const advice = rig.logs.filter((l) => typeof l.msg === 'string' && l.msg.includes('-wal was deleted while a boxwatch daemon has'));
    expect(advice).toHaveLength(1);
    expect(advice[0]?.msg).toContain('restart the daemon cleanly (SIGTERM');
    expect(rig.cycles().slice(-2)).toEqual(['ok', 'ok']);

    let err = '';
    const code = await runCli(['status', '--db', rig.dbPath], { out: () => undefined, err: (t) => (err += t), env: {}, signal: new AbortController().signal, isTTY: false }, allCommands);
    expect(code).toBe(1);
    expect(err).toContain('store_wal_missing');
    expect(err).toContain('restart the daemon cleanly');
    expect(err).not.toContain('disk I/O error');
  });
});

describe('a file that is not a usable boxwatch database', () => {
  /** Runs `boxwatch run` in-process on a database file; the exit code and what it printed. */
  async function runOn(dbPath: string): Promise<{ code: number; err: string; out: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-rel-db-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const configPath = join(dir, 'boxwatch.yaml');
    writeFileSync(
      configPath,
      `gateway: { base_url: "http://127.0.0.1:9", secret_key: "k" }
storage: { path: "${dbPath}" }
notifiers: [{ name: console, type: console }]
http: false
log: { level: error, format: json }
`,
    );
    let out = '';
    let err = '';
    const controller = new AbortController();
    const code = await runCli(
      ['run', '--config', configPath],
      { out: (s) => (out += s), err: (s) => (err += s), env: {}, signal: controller.signal, isTTY: false },
      allCommands,
    );
    controller.abort();
    return { code, err, out };
  }

  const tempFile = (name: string, content: Buffer | string): string => {
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-rel-file-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('a file that is not SQLite: refused with store_not_sqlite, exit 1, the file untouched', async () => {
    const content = 'these are somebody\'s notes, not a database\n'.repeat(200);
    const path = tempFile('notes.db', content);
    const { code, err } = await runOn(path);
    expect(code).toBe(1);
    expect(err).toBe(`error [store_not_sqlite]: ${path} is not a boxwatch database (not a SQLite file, or damaged)\n`);
    expect(readFileSync(path, 'utf8')).toBe(content);
  });

  it('a SQLite database of another application: refused with store_foreign, exit 1, the file untouched', async () => {
    const path = tempFile('other.db', '');
    rmSync(path);
    const other = new Database(path);
    other.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5)");
    other.close();
    const before = readFileSync(path);
    const { code, err } = await runOn(path);
    expect(code).toBe(1);
    expect(err).toBe(`error [store_foreign]: ${path} is a SQLite database that boxwatch did not create; refusing to use it\n`);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  /** A boxwatch database after a few cycles, as bytes, with the root page of `table` overwritten. */
  async function damagedDatabase(table: string | null): Promise<Buffer> {
    rig = await startRig();
    for (let i = 0; i < 3; i++) await rig.cycle();
    const root = table && (connectionOf(rig.app.store).prepare('SELECT rootpage FROM sqlite_schema WHERE name = ?').pluck().get(table) as number);
    await rig.app.stop();
    const bytes = readFileSync(rig.dbPath);
    const pageSize = bytes.readUInt16BE(16);
    // One table's root page, or every page but the first (the SQLite header stays).
    const [from, to] = root ? [(root - 1) * pageSize, root * pageSize] : [pageSize, bytes.length];
    for (let i = from; i < to; i++) bytes[i] = (i * 7919) & 0xff;
    return bytes;
  }

  it('a boxwatch database whose pages are garbage: refused with store_not_sqlite, exit 1', async () => {
    const path = tempFile('damaged.db', await damagedDatabase(null));
    const { code, err } = await runOn(path);
    expect(code).toBe(1);
    expect(err).toBe(`error [store_not_sqlite]: ${path} is not a boxwatch database (not a SQLite file, or damaged)\n`);
  });

  it('a boxwatch database with a damaged page read at start: refused with store_corrupt, exit 1', async () => {
    const path = tempFile('damaged.db', await damagedDatabase('schema_migrations'));
    const { code, err } = await runOn(path);
    expect(code).toBe(1);
    expect(err).toBe(`error [store_corrupt]: ${path} is damaged (database disk image is malformed); restore it from a backup or move it away\n`);
  });
});
