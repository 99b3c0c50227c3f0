/**
 * One daemon per database (SqliteStore.lockForDaemon): a second daemon refuses to start, naming
 * the holder (pid, host, since, last heartbeat) and the database; a holder whose process is gone
 * (same host) or whose heartbeat stopped (any host) is taken over; a daemon taken over learns it
 * at its next heartbeat; read-only users (the CLI) never take or release it. The same with real
 * `boxwatch run` processes is in test/reliability/process.reliability.test.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DAEMON_STALE_AFTER_MS, openStore, StoreError, type DaemonHolder } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { connectionOf } from '../helpers/sqlite.js';
import { tempDir } from './model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let tmp: ReturnType<typeof tempDir>;
let path: string;
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, 'boxwatch.db');
});
afterEach(() => tmp.cleanup());

/** Plants a holder as another daemon would have written it. */
function plantHolder(holder: DaemonHolder): void {
  const store = openStore(path);
  connectionOf(store).prepare("INSERT INTO meta (key, value) VALUES ('daemon', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(JSON.stringify(holder));
  store.close();
}

/** The holder as stored, read by a reader of its own. */
function storedHolder(): DaemonHolder | undefined {
  const r = openStore(path, { readonly: true });
  try {
    const text = connectionOf(r).prepare("SELECT value FROM meta WHERE key = 'daemon'").pluck().get() as string | undefined;
    return text === undefined ? undefined : (JSON.parse(text) as DaemonHolder);
  } finally {
    r.close();
  }
}

function refusal(lock: () => unknown): StoreError {
  try {
    lock();
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('store_in_use');
    return err as StoreError;
  }
  throw new Error('not refused');
}

describe('one daemon per database', () => {
  it('a second daemon is refused, naming the holder (pid, host, since) and the database', () => {
    const first = openStore(path, { clock: new FakeClock(T0) });
    const second = openStore(path, { clock: new FakeClock(T0 + 60_000) });
    try {
      expect(first.lockForDaemon()).toEqual({ holder: { pid: process.pid, host: hostname(), since: T0, beat: expect.any(Number) }, tookOver: null });
      // Our own pid counts as stale (an earlier life of this process), so the holder is planted as a live other process.
      const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
      try {
        connectionOf(first).prepare("UPDATE meta SET value = ? WHERE key = 'daemon'").run(JSON.stringify({ pid: sleeper.pid, host: hostname(), since: T0, beat: Date.now() - 4_000 }));
        expect(refusal(() => second.lockForDaemon()).message).toMatch(
          new RegExp(`^${path} is in use by another boxwatch daemon \\(pid ${sleeper.pid} on ${hostname()}, since 2026-03-01T10:00:00\\.000Z, last heartbeat [45]s ago\\); stop it first, or give this one another storage\\.path$`),
        );
      } finally {
        sleeper.kill('SIGKILL');
      }
    } finally {
      second.close();
      first.close();
    }
  });

  it('a holder on another host without a heartbeat (an older boxwatch) is never taken over: its process cannot be checked', () => {
    plantHolder({ pid: 1, host: 'elsewhere.example', since: T0 });
    const store = openStore(path);
    try {
      expect(() => store.lockForDaemon()).toThrow(/in use by another boxwatch daemon \(pid 1 on elsewhere\.example, since 2026-03-01T10:00:00\.000Z\)/);
    } finally {
      store.close();
    }
  });

  it('a holder whose process is gone is taken over, and its unfinished claims on the outbox are voided', async () => {
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await once(dead, 'exit');
    plantHolder({ pid: dead.pid as number, host: hostname(), since: T0 });
    const store = openStore(path, { clock: new FakeClock(T0 + 3_600_000) });
    try {
      const outbox = store.outbox();
      outbox.enqueue('mail', { kind: 'alert' }, T0);
      expect(outbox.claim('mail', T0, 10, 86_400_000)).toHaveLength(1); // claimed by the process that died
      expect(store.lockForDaemon()).toEqual({ holder: expect.objectContaining({ pid: process.pid, host: hostname(), since: T0 + 3_600_000 }), tookOver: { pid: dead.pid, host: hostname(), since: T0 } });
      expect(outbox.claim('mail', T0, 10, 60_000)).toHaveLength(1); // due again at once
    } finally {
      store.close();
    }
  });

  // Linux only: a zombie is told from /proc/<pid>/stat; elsewhere there is none to read.
  it.runIf(process.platform === 'linux')('a holder killed but not yet reaped by its parent (a zombie) is gone: taken over at once, its heartbeat fresh', async () => {
    // The shell starts a child, prints its pid, then becomes `sleep`, which never waits for it.
    const parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const [line] = (await once(parent.stdout, 'data')) as [Buffer];
      const pid = Number(line.toString().trim());
      // Killed only once the shell has become `sleep`: the shell itself would reap its job.
      await vi.waitFor(() => expect(readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim()).toBe('sleep'), { timeout: 5_000, interval: 10 });
      process.kill(pid, 'SIGKILL');
      await vi.waitFor(() => expect(readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) Z /), { timeout: 5_000, interval: 10 });
      plantHolder({ pid, host: hostname(), since: T0, beat: Date.now() });
      const store = openStore(path, { clock: new FakeClock(T0 + 1_000) });
      try {
        expect(store.lockForDaemon().tookOver).toEqual({ pid, host: hostname(), since: T0, beat: expect.any(Number) });
      } finally {
        store.close();
      }
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('stopping gives the database up: the next daemon starts; a reader neither takes nor releases it', () => {
    const first = openStore(path, { clock: new FakeClock(T0) });
    first.lockForDaemon();
    const reader = openStore(path, { readonly: true });
    reader.close(); // the CLI reading next to the daemon
    const holder = (): unknown => {
      const r = openStore(path, { readonly: true });
      try {
        return connectionOf(r).prepare("SELECT value FROM meta WHERE key = 'daemon'").pluck().get();
      } finally {
        r.close();
      }
    };
    expect(JSON.parse(holder() as string)).toMatchObject({ pid: process.pid, since: T0 });
    first.close();
    expect(holder()).toBeUndefined();
    const next = openStore(path, { clock: new FakeClock(T0 + 1) });
    try {
      expect(next.lockForDaemon().holder.since).toBe(T0 + 1);
    } finally {
      next.close();
    }
  });

  it('a holder on another host is refused while its heartbeat is fresh, and taken over once it stopped longer than the bound', () => {
    const now = Date.now();
    plantHolder({ pid: 4242, host: 'container-a', since: T0, beat: now - DAEMON_STALE_AFTER_MS + 10_000 });
    const store = openStore(path, { clock: new FakeClock(T0 + 3_600_000) });
    try {
      expect(refusal(() => store.lockForDaemon()).message).toMatch(/\(pid 4242 on container-a, since 2026-03-01T10:00:00\.000Z, last heartbeat 5\ds ago\)/); // 50 s, and the time this test took
      const gone = { pid: 4242, host: 'container-a', since: T0, beat: now - DAEMON_STALE_AFTER_MS - 1_000 };
      plantHolder(gone);
      expect(store.lockForDaemon()).toEqual({ holder: expect.objectContaining({ pid: process.pid, host: hostname() }), tookOver: gone });
      expect(storedHolder()).toMatchObject({ pid: process.pid, host: hostname(), since: T0 + 3_600_000 });
    } finally {
      store.close();
    }
  });

  it('the heartbeat moves the time of the hold on; a holder taken over learns it at its next heartbeat and leaves the new hold alone', () => {
    const first = openStore(path, { clock: new FakeClock(T0) });
    try {
      first.lockForDaemon();
      const mine = storedHolder()!;
      const old = Date.now() - 30_000;
      connectionOf(first).prepare("UPDATE meta SET value = ? WHERE key = 'daemon'").run(JSON.stringify({ ...mine, beat: old }));
      first.heartbeatForDaemon();
      expect(storedHolder()).toEqual({ ...mine, beat: expect.any(Number) });
      expect(storedHolder()!.beat).toBeGreaterThan(old);

      // its heartbeat had stopped for longer than the bound (a stalled host): another daemon took over
      const other = { pid: 4242, host: 'container-b', since: T0 + 120_000, beat: Date.now() };
      plantHolder(other);
      expect(refusal(() => first.heartbeatForDaemon()).message).toBe(
        `${path} was taken over by another boxwatch daemon (now held by pid 4242 on container-b, since 2026-03-01T10:02:00.000Z): this daemon's heartbeat had stopped for too long`,
      );
      first.heartbeatForDaemon(); // no longer a holder: nothing to refresh
    } finally {
      first.close(); // does not give up the other one's hold
    }
    expect(storedHolder()).toEqual({ pid: 4242, host: 'container-b', since: T0 + 120_000, beat: expect.any(Number) });
  });
});
