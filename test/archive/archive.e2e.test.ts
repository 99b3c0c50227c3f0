/**
 * The recording archive end to end: the simulator's background calls over real HTTP, recordings
 * served by a real recording host (a separate HTTP server, test/archive/recording-host.ts), the
 * daemon (createApp) on a real SQLite file writing real files in a temporary directory, alerts
 * delivered to a real Slack receiver and a real SMTP server, and `boxwatch recordings verify` run
 * as the built executable. One fake clock; every simulated minute a call sync, an archive pass,
 * a poll cycle and a delivery pass run.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { nodeFs, type ArchiveFs } from '../../src/archive/index.js';
import { ARCHIVE_MARKER } from '../../src/archive/identity.js';
import { maskNumber } from '../../src/calls/privacy.js';
import { createLogger } from '../../src/log.js';
import { SILENT_WAV } from '../../src/sim/calls.js';
import { ensureBuilt } from '../e2e/build.js';
import { slackTexts, startRig, type Rig, type RigOptions } from '../e2e/harness.js';
import { runBuilt } from '../helpers/cli-process.js';
import { startRecordingHost, type RecordingHost } from './recording-host.js';

const M = 60_000;

let rig: Rig | undefined;
const hosts: RecordingHost[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
beforeAll(async () => {
  await ensureBuilt();
}, 300_000);

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'boxwatch-archive-'));
  dirs.push(d);
  return d;
}

async function recordingHost(host?: string): Promise<RecordingHost> {
  const h = await startRecordingHost(host === undefined ? {} : { host });
  hosts.push(h);
  return h;
}

interface ArchiveRigOptions {
  devices?: number;
  archive?: string;
  calls?: string;
  rules?: string;
  scenario?: string;
  /** Top-level scenario keys (e.g. `recording_ttl: 10m`). */
  scenarioTop?: string;
  recordings: RecordingHost;
  app?: RigOptions['app'];
  logger?: RigOptions['logger'];
  /** Serve HTTP (/metrics); the schedules never fire during the test. */
  http?: boolean;
}

/** A rig with calls and an archive in `dir`; the simulator's recording URLs point at `recordings`. */
async function archiveRig(dir: string, o: ArchiveRigOptions): Promise<Rig> {
  const yaml = `rules:
  - { name: recording-lost, kind: recording_lost, window: 1h, severity: warning }
  - { name: archive-failing, kind: archive_failing, severity: critical }
${o.rules ?? ''}alerting: { group_wait: 0s }
calls: { per_page: 100${o.http ? ', schedule: "0 0 1 1 *"' : ''}${o.calls ?? ''} }
archive: { dir: "${dir}", concurrency: 2${o.archive ?? ''} }
`;
  const scenario = `${o.scenarioTop ?? ''}calls: { per_box_per_hour: 20 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
${o.scenario ?? ''}`;
  // Started hours ago (whole minute), so that the CLI's wall-clock windows (`calls stats --since 24h`) hold the calls.
  const start = Math.floor((Date.now() - 4 * 3_600_000) / M) * M;
  rig = await startRig({ devices: o.devices ?? 3, seed: 11, start, yaml, scenario, sim: { historyCalls: 0, recordingsUrl: o.recordings.url }, ...(o.app && { app: o.app }), ...(o.logger && { logger: o.logger }), ...(o.http && { http: {} }) });
  o.recordings.target = rig.sim.url;
  return rig;
}

/** Every simulated minute: a call sync, an archive pass, a poll cycle, a delivery pass. */
async function minutes(r: Rig, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    r.clock.advance(M);
    await r.app.runCallsOnce();
    await r.app.runArchiveOnce();
    await r.app.runOnce();
    await r.app.deliverNow();
  }
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The recording and sidecar files under `dir` (not the archive's marker file, `.boxwatch-archive`). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !(e.parentPath === dir && e.name === ARCHIVE_MARKER))
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

function slackWith(r: Rig, text: string): string[] {
  return r.slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => t.includes(text));
}

function mailsWith(r: Rig, text: string): string[] {
  return r.smtp.messages.map((m) => `${m.subject}\n${m.text}`).filter((t) => t.includes(text));
}

/** The file system of the archive with a disk that can be made full: writes then fail with ENOSPC after a few bytes. */
function fillableFs(): ArchiveFs & { full: boolean; refused: number } {
  const fs = {
    ...nodeFs,
    full: false,
    refused: 0,
    async open(path: string, flags: string) {
      const file = await nodeFs.open(path, flags);
      if (flags !== 'wx') return file;
      return {
        async write(data: Uint8Array, offset: number, length: number) {
          if (!fs.full) return file.write(data, offset, length);
          await file.write(data, offset, Math.min(length, 10)); // part of it fits, then the disk is full
          fs.refused += 1;
          throw Object.assign(new Error(`ENOSPC: no space left on device, write`), { code: 'ENOSPC', errno: -28, syscall: 'write' });
        },
        sync: () => file.sync(),
        close: () => file.close(),
      };
    },
  };
  return fs;
}

/** A JSON logger at debug level whose lines are kept. */
function memoryLogger(): { logger: NonNullable<RigOptions['logger']>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines };
}

async function metric(r: Rig, name: string): Promise<number> {
  const m = await r.app.metrics.registry.getSingleMetric(name)?.get();
  return m?.values.reduce((t, v) => t + v.value, 0) ?? Number.NaN;
}

describe('recording archive', () => {
  it('archives every completed call\'s recording with its sidecar and checksum; verify passes, then fails on a tampered file', async () => {
    const dir = tempDir();
    const host = await recordingHost();
    const r = await archiveRig(dir, { recordings: host, http: true });
    await minutes(r, 40);

    const calls = r.app.store.calls.list({ limit: 1000 });
    const completed = calls.filter((c) => c.status === 'completed' && (c.endedAt as number) < r.clock.now() - 2 * M);
    expect(completed.length).toBeGreaterThan(5);
    for (const c of completed) expect(c.recording).toBe('archived');
    for (const c of calls.filter((c) => c.status === 'failed')) expect(c.recording).toBe('none');

    const archived = r.app.store.recordings.archivedAll();
    expect(archived.length).toBe(calls.filter((c) => c.recording === 'archived').length);
    for (const a of archived) {
      const call = calls.find((c) => c.callId === a.callId);
      const day = new Date(call?.startedAt as number).toISOString().slice(0, 10).replaceAll('-', '/');
      expect(a.path).toBe(`${day}/${a.callId}.wav`);
      expect(a.sidecar).toBe(`${day}/${a.callId}.json`);
      const audio = readFileSync(join(dir, a.path));
      expect(audio.equals(SILENT_WAV)).toBe(true);
      expect(a.sha256).toBe(sha256(audio));
      const sidecar = JSON.parse(readFileSync(join(dir, a.sidecar), 'utf8')) as { call: Record<string, unknown>; recording: Record<string, unknown> };
      expect(sidecar.call.callId).toBe(a.callId);
      expect(sidecar.call.box).toBe(call?.serial);
      expect(sidecar.recording).toMatchObject({ file: `${a.callId}.wav`, sha256: a.sha256, bytes: SILENT_WAV.length, contentType: 'audio/wav' });
    }
    // Only whole files under their final names: no temporary file is left behind.
    expect(filesUnder(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(filesUnder(dir)).toHaveLength(2 * archived.length);
    // The directory carries its archive's id, and every recording says it is in it.
    const id = (JSON.parse(readFileSync(join(dir, ARCHIVE_MARKER), 'utf8')) as { id: string }).id;
    expect(archived.map((a) => a.archive)).toEqual(archived.map(() => id));

    expect(await metric(r, 'boxwatch_recordings_archived_total')).toBe(archived.length);
    expect(await metric(r, 'boxwatch_archive_bytes')).toBe(archived.length * SILENT_WAV.length);
    expect(await metric(r, 'boxwatch_recordings_lost_total')).toBe(0);
    expect(r.slack.received).toHaveLength(0);
    await r.app.metrics.prepare();
    const exposition = await (await fetch(`${r.app.httpUrl}/metrics`)).text();
    expect(exposition).toContain(`boxwatch_recordings_archived_total ${archived.length}\n`);
    expect(exposition).toContain('boxwatch_recordings_lost_total 0\n');
    expect(exposition).toContain(`boxwatch_archive_bytes ${archived.length * SILENT_WAV.length}\n`);

    const stats = await runBuilt(['calls', 'stats', '--db', r.dbPath, '--format', 'json']);
    expect(stats.code).toBe(0);
    const rows = (JSON.parse(stats.out) as { rows: { recordingsArchived: number; recordingsLost: number }[] }).rows;
    expect(rows.reduce((t, x) => t + x.recordingsArchived, 0)).toBe(archived.length);

    const ok = await runBuilt(['recordings', 'verify', '--db', r.dbPath, '--dir', dir]);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(new RegExp(`^${archived.length} recordings \\(${2 * archived.length} files with their sidecars\\) checked in .*: all match\\n$`));

    // One recording altered, one sidecar deleted: each named on its own line, exit 1.
    const [first, second] = archived as [(typeof archived)[0], (typeof archived)[0]];
    const tampered = readFileSync(join(dir, first.path));
    tampered[100] = (tampered[100] as number) ^ 0xff;
    writeFileSync(join(dir, first.path), tampered);
    rmSync(join(dir, second.sidecar));
    const bad = await runBuilt(['recordings', 'verify', '--db', r.dbPath, '--dir', dir]);
    expect(bad.code).toBe(1);
    const lines = bad.out.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('MISMATCH'))).toEqual([`MISMATCH  ${first.path}  (call ${first.callId})`]);
    expect(lines.filter((l) => l.startsWith('MISSING'))).toEqual([`MISSING   ${second.sidecar}  (call ${second.callId})`]);
    expect(lines.at(-1)).toMatch(/: 2 bad$/);
    expect(bad.err).toMatch(/2 archived files are missing or do not match the recorded SHA-256/);

    // A row whose path carries terminal escapes (a tampered database) is shown escaped, never sent to the terminal.
    const db = new Database(r.dbPath);
    db.prepare(`INSERT INTO recordings (call_id, serial, path, sha256, bytes, sidecar, sidecar_sha256, archived_at) VALUES (?, 'BX-00001', ?, 'x', 1, ?, 'x', 1)`).run(
      'evil\u001b[2J',
      '2026/03/01/\u001b[31mred\u202e.wav',
      '2026/03/01/evil.json',
    );
    db.close();
    const hostile = await runBuilt(['recordings', 'verify', '--db', r.dbPath, '--dir', dir]);
    expect(hostile.code).toBe(1);
    expect(hostile.out).not.toContain('\u001b');
    expect(hostile.out).not.toContain('\u202e');
    expect(hostile.out).toContain('MISSING   2026/03/01/\\x1b[31mred\\u202e.wav  (call evil\\x1b[2J)');
  }, 120_000);

  it('a recording that expires during an outage of the recording host raises recording_lost once, and it resolves after the window', async () => {
    const dir = tempDir();
    const host = await recordingHost();
    const r = await archiveRig(dir, { devices: 1, recordings: host, scenarioTop: 'recording_ttl: 10m\n' });
    await minutes(r, 10);
    const before = r.app.store.recordings.archivedAll().length;
    expect(before).toBeGreaterThan(0);

    host.mode = 'down'; // every connection to the recording host is closed unanswered
    await minutes(r, 30);
    const lost = r.app.store.calls.list({ limit: 1000 }).filter((c) => c.recording === 'expired');
    expect(lost.length).toBeGreaterThan(1); // several recordings lost ...
    expect(r.app.store.recordings.archivedAll()).toHaveLength(before);
    const firing = slackWith(r, 'expired before');
    expect(firing).toHaveLength(1); // ... one alert
    expect(firing[0]).toMatch(/FIRING/);
    expect(firing[0]).toContain('BX-00001');
    expect(mailsWith(r, 'expired before')).toHaveLength(1);
    expect((await r.app.alerts.states()).get('recording-lost\u0000BX-00001')?.status).toBe('firing');
    expect(await metric(r, 'boxwatch_recordings_lost_total')).toBe(lost.length);
    expect(await metric(r, 'boxwatch_recording_attempts_failed_total')).toBeGreaterThan(lost.length);

    // The host is back: new recordings are archived; the alert stays (no second message) ...
    host.mode = 'proxy';
    await minutes(r, 20);
    expect(r.app.store.recordings.archivedAll().length).toBeGreaterThan(before);
    expect(slackWith(r, 'expired before')).toHaveLength(1);
    // ... and resolves once an hour has passed without a loss (the last recordings of the outage
    // are found expired up to their 10 minutes' TTL after it).
    await minutes(r, 55);
    const told = slackWith(r, 'recording');
    expect(told).toHaveLength(2);
    expect(told[1]).toMatch(/RESOLVED/);
    expect(r.slack.received).toHaveLength(2);

    const stats = await runBuilt(['calls', 'stats', '--db', r.dbPath, '--format', 'json']);
    const rows = (JSON.parse(stats.out) as { rows: { recordingsLost: number }[] }).rows;
    const lostInTheEnd = r.app.store.calls.list({ limit: 1000 }).filter((c) => c.recording === 'expired').length;
    expect(lostInTheEnd).toBeGreaterThanOrEqual(lost.length);
    expect(rows.reduce((t, x) => t + x.recordingsLost, 0)).toBe(lostInTheEnd);
    expect(await metric(r, 'boxwatch_recordings_lost_total')).toBe(lostInTheEnd);
  }, 120_000);

  it('never follows a redirect to another host unless archive.allow_hosts names it', async () => {
    const other = await recordingHost('127.0.0.2'); // another host, serving the recordings
    const host = await recordingHost();
    host.mode = { redirectTo: other.url };

    const refused = await archiveRig(tempDir(), { recordings: host });
    other.target = refused.sim.url;
    await minutes(refused, 8);
    expect(host.requests).toBeGreaterThan(0);
    expect(other.requests).toBe(0); // the redirect was never followed
    expect(refused.app.store.recordings.archivedAll()).toHaveLength(0);
    const reasons = await refused.app.metrics.registry.getSingleMetric('boxwatch_recording_attempts_failed_total')?.get();
    expect(reasons?.values.map((v) => v.labels.reason)).toEqual(['redirect_refused']);
    await refused.close();
    rig = undefined;

    const dir = tempDir();
    const allowed = await archiveRig(dir, { recordings: host, archive: ', allow_hosts: ["127.0.0.2"]' });
    other.target = allowed.sim.url;
    await minutes(allowed, 8);
    const archived = allowed.app.store.recordings.archivedAll();
    expect(archived.length).toBeGreaterThan(0);
    expect(other.requests).toBe(archived.length);
    for (const a of archived) expect(readFileSync(join(dir, a.path)).equals(SILENT_WAV)).toBe(true);
  }, 120_000);

  it('survives a full disk: polling goes on, no half-written file, archive_failing alerts, and the recordings are archived once there is room', async () => {
    const dir = tempDir();
    const host = await recordingHost();
    const fs = fillableFs();
    const r = await archiveRig(dir, { recordings: host, app: { archiveFs: fs } });
    await minutes(r, 10);
    const before = r.app.store.recordings.archivedAll().length;
    expect(before).toBeGreaterThan(0);

    fs.full = true;
    for (let i = 0; i < 15; i++) {
      r.clock.advance(M);
      await r.app.runCallsOnce();
      await r.app.runArchiveOnce();
      const cycle = await r.app.runOnce();
      expect(cycle?.cycle.outcome).toBe('ok'); // the daemon keeps monitoring
      await r.app.deliverNow();
    }
    expect(fs.refused).toBeGreaterThan(0);
    expect(r.app.store.recordings.archivedAll()).toHaveLength(before);
    // Nothing half-written: every file is a whole one the database knows; no temporary file is left.
    expect(filesUnder(dir)).toHaveLength(2 * before);
    expect(filesUnder(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const waiting = r.app.store.calls.list({ limit: 1000 }).filter((c) => c.recording === 'available');
    expect(waiting.length).toBeGreaterThan(0);
    const alert = slackWith(r, 'cannot write its files');
    expect(alert).toHaveLength(1);
    expect(alert[0]).toMatch(/FIRING/);
    expect(alert[0]).toContain('ENOSPC (disk full)');
    expect(mailsWith(r, 'cannot write its files')).toHaveLength(1);

    fs.full = false;
    await minutes(r, 20);
    const archived = r.app.store.recordings.archivedAll();
    for (const c of waiting) expect(archived.some((a) => a.callId === c.callId)).toBe(true);
    expect(slackWith(r, 'cannot write its files')).toHaveLength(1);
    expect((await r.app.alerts.states()).get('archive-failing\u0000')?.status).not.toBe('firing');
    expect(slackWith(r, 'RESOLVED').filter((t) => /archive/i.test(t))).toHaveLength(1);
    const ok = await runBuilt(['recordings', 'verify', '--db', r.dbPath, '--dir', dir]);
    expect(ok.code).toBe(0);
  }, 120_000);

  it('keeps numbers, transcripts and variables out of sidecars and logs unless enabled', async () => {
    /** Every call the simulator placed, by id. */
    const book = (r: Rig): Map<string, { to: string; transcript: string | null; variables: Record<string, string> | null }> => {
      const out = new Map<string, { to: string; transcript: string | null; variables: Record<string, string> | null }>();
      for (let id = 100_001; ; id++) {
        const c = r.sim.sim.calls.get(id);
        if (c === undefined) return out;
        out.set(String(id), c);
      }
    };
    const sidecarsOf = (dir: string): { call: Record<string, unknown> }[] =>
      filesUnder(dir)
        .filter((f) => f.endsWith('.json'))
        .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as { call: Record<string, unknown> });

    // Default: masked numbers only, no transcript, no variables; failed attempts logged.
    const hiddenDir = tempDir();
    const host = await recordingHost();
    const log = memoryLogger();
    const hidden = await archiveRig(hiddenDir, { recordings: host, logger: log.logger, scenarioTop: 'recording_ttl: 4m\n' });
    await minutes(hidden, 10);
    host.mode = 'down';
    await minutes(hidden, 10);
    host.mode = 'proxy';
    await minutes(hidden, 5);
    expect(log.lines.some((l) => l.includes('recording not archived yet'))).toBe(true);
    expect(log.lines.some((l) => l.includes('recording lost'))).toBe(true);
    const calls = book(hidden);
    const sidecars = sidecarsOf(hiddenDir);
    expect(sidecars.length).toBeGreaterThan(3);
    const everything = `${sidecars.map((s) => JSON.stringify(s)).join('\n')}\n${log.lines.join('')}`;
    expect(everything).not.toContain('Agent: '); // no transcript line
    for (const c of calls.values()) {
      expect(everything).not.toContain(c.to);
      expect(everything).not.toContain(c.to.slice(1));
      if (c.variables) expect(everything).not.toContain(c.variables.customer_ref);
    }
    for (const s of sidecars) {
      expect(Object.keys(s.call)).not.toContain('toNumber');
      expect(Object.keys(s.call)).not.toContain('transcript');
      expect(Object.keys(s.call)).not.toContain('variables');
      expect(s.call.to).toBe(maskNumber(calls.get(s.call.callId as string)?.to as string));
    }
    await hidden.close();
    rig = undefined;

    // Enabled: the sidecar holds the number, the transcript and the variables.
    const shownDir = tempDir();
    const shown = await archiveRig(shownDir, { recordings: host, calls: ', store_numbers: true, store_transcripts: true' });
    await minutes(shown, 15);
    const shownCalls = book(shown);
    const shownSidecars = sidecarsOf(shownDir);
    expect(shownSidecars.length).toBeGreaterThan(3);
    let transcripts = 0;
    for (const s of shownSidecars) {
      const c = shownCalls.get(s.call.callId as string);
      expect(s.call.toNumber).toBe(c?.to);
      expect(s.call.variables).toEqual(c?.variables);
      if (c?.transcript) {
        transcripts += 1;
        expect(s.call.transcript).toBe(c.transcript);
      } else expect(s.call.transcript).toBeUndefined();
    }
    expect(transcripts).toBeGreaterThan(0);
  }, 120_000);

  it('retention deletes archived files older than archive.retention, and their empty directories', async () => {
    const dir = tempDir();
    const host = await recordingHost();
    const r = await archiveRig(dir, { recordings: host, archive: ', retention: 1h' });
    const start = r.clock.now();
    await minutes(r, 20);
    const archived = r.app.store.recordings.archivedAll();
    const old = archived.filter((a) => a.archivedAt < start + 10 * M);
    const young = archived.filter((a) => a.archivedAt >= start + 10 * M);
    expect(old.length).toBeGreaterThan(0);
    expect(young.length).toBeGreaterThan(0);

    r.clock.set(start + 70 * M); // the first ten minutes' recordings are now older than an hour
    const pass = await r.app.runArchiveOnce();
    expect(pass?.deleted).toBe(old.length);
    expect(filesUnder(dir)).toEqual(young.flatMap((a) => [a.path, a.sidecar]).sort());
    expect(r.app.store.recordings.archivedAll().map((a) => a.callId).sort()).toEqual(young.map((a) => a.callId).sort());
    expect(await metric(r, 'boxwatch_archive_bytes')).toBe(young.length * SILENT_WAV.length);
    const ok = await runBuilt(['recordings', 'verify', '--db', r.dbPath, '--dir', dir]);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(new RegExp(`^${young.length} recordings`));

    r.clock.set(start + 3 * 60 * M); // everything old: the day directories go too
    await r.app.runArchiveOnce();
    expect(filesUnder(dir)).toEqual([]);
    expect(readdirSync(dir)).toEqual([ARCHIVE_MARKER]); // only the archive's id is left
  }, 120_000);
});
