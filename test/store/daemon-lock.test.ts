/**
 * One daemon per database (SqliteStore.lockForDaemon): a second daemon refuses to start, naming
 * the holder (pid, host, since) and the database; a holder whose process is gone is taken over;
 * read-only users (the CLI) never take or release it. The process-level refusal of a second
 * `boxwatch run` is in test/reliability/process.reliability.test.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, StoreError } from '../../src/store/index.js';
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
function plantHolder(holder: { pid: number; host: string; since: number }): void {
  const store = openStore(path);
  connectionOf(store).prepare("INSERT INTO meta (key, value) VALUES ('daemon', ?)").run(JSON.stringify(holder));
  store.close();
}

describe('one daemon per database', () => {
  it('a second daemon is refused, naming the holder (pid, host, since) and the database', () => {
    const first = openStore(path, { clock: new FakeClock(T0) });
    const second = openStore(path, { clock: new FakeClock(T0 + 60_000) });
    try {
      expect(first.lockForDaemon()).toEqual({ pid: process.pid, host: hostname(), since: T0 });
      // Our own pid counts as stale (an earlier life of this process), so the holder is planted as a live other process.
      const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
      try {
        connectionOf(first).prepare("UPDATE meta SET value = ? WHERE key = 'daemon'").run(JSON.stringify({ pid: sleeper.pid, host: hostname(), since: T0 }));
        let error: unknown;
        try {
          second.lockForDaemon();
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).code).toBe('store_in_use');
        expect((error as StoreError).message).toBe(
          `${path} is in use by another boxwatch daemon (pid ${sleeper.pid} on ${hostname()}, since 2026-03-01T10:00:00.000Z); stop it first, or give this one another storage.path`,
        );
      } finally {
        sleeper.kill('SIGKILL');
      }
    } finally {
      second.close();
      first.close();
    }
  });

  it('a holder on another host is never taken over (its process cannot be checked)', () => {
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
      expect(store.lockForDaemon()).toEqual({ pid: process.pid, host: hostname(), since: T0 + 3_600_000 });
      expect(outbox.claim('mail', T0, 10, 60_000)).toHaveLength(1); // due again at once
    } finally {
      store.close();
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
      expect(next.lockForDaemon().since).toBe(T0 + 1);
    } finally {
      next.close();
    }
  });
});
