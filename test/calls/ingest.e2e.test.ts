/**
 * Call ingestion end to end: the simulator's background calls over real HTTP, the daemon's call
 * sync (createApp) on a real SQLite file, the shared fake clock.
 */
import Database from 'better-sqlite3';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from '../e2e/harness.js';

const M = 60_000;
const H = 60 * M;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const RULES = 'rules: []\nalerting: { group_wait: 0s }\n';

async function callsRig(calls: string, scenario: string, devices = 12): Promise<Rig> {
  rig = await startRig({
    devices,
    seed: 9,
    yaml: `${RULES}calls: ${calls}\n`,
    scenario,
    sim: { historyCalls: 0 },
  });
  return rig;
}

/** The simulator's calls as its list shows them now, oldest first. */
function simCalls(r: Rig) {
  const now = r.sim.sim.sync();
  return r.sim.sim.calls
    .page(10_000_000, 1)
    .items.reverse()
    .map((c) => r.sim.sim.calls.summaryAt(c, now));
}

interface Row {
  call_id: string;
  serial: string;
  agent_id: number;
  status: string;
  started_at: number;
  ended_at: number | null;
  duration_sec: number | null;
  to_hash: string;
  to_masked: string;
  to_number: string | null;
  recording: string | null;
  transcript: string | null;
  variables: string | null;
}

function dbCalls(r: Rig): Row[] {
  const db = new Database(r.dbPath, { readonly: true });
  try {
    return db.prepare('SELECT * FROM calls ORDER BY started_at, call_id').all() as Row[];
  } finally {
    db.close();
  }
}

/** Runs call cycles every `stepMs` for `totalMs` of shared time. */
async function syncFor(r: Rig, totalMs: number, stepMs = M) {
  const results = [];
  for (let t = 0; t < totalMs; t += stepMs) {
    r.clock.advance(stepMs);
    const res = await r.app.runCallsOnce();
    if (res) results.push(res);
  }
  return results;
}

const TRAFFIC = 'calls: { per_box_per_hour: 30 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n';

describe('call ingestion', () => {
  it('stores every call with its final status, box, agent and times, newest pages first, no duplicates', async () => {
    const r = await callsRig('{ schedule: "0 * * * * *", per_page: 20 }', TRAFFIC);
    const results = await syncFor(r, 90 * M);
    expect(results.every((x) => x.outcome === 'ok' && x.complete)).toBe(true);
    const sim = simCalls(r);
    const rows = dbCalls(r);
    expect(sim.length).toBeGreaterThan(400);
    const byId = new Map(rows.map((x) => [x.call_id, x]));
    expect(byId.size).toBe(rows.length);
    // every call the simulator had placed by the last read is stored
    const lastRead = r.clock.now();
    const placed = sim.filter((c) => Date.parse(c.started_at) <= lastRead);
    expect(rows.length).toBe(placed.length);
    let finals = 0;
    for (const c of placed) {
      const row = byId.get(c.call_id);
      expect(row, c.call_id).toBeDefined();
      expect(row?.serial).toBe(c.from.slice('box:'.length));
      expect(row?.agent_id).toBe(c.agent_id);
      expect(row?.started_at).toBe(Date.parse(c.started_at));
      if (c.status !== 'initiated') {
        finals += 1;
        expect(row?.status, c.call_id).toBe(c.status);
        expect(row?.ended_at).toBe(Date.parse(c.ended_at ?? ''));
        expect(row?.duration_sec).toBe(c.duration_sec);
      }
    }
    expect(finals).toBeGreaterThan(350);
    // failures come from the signal model: some, not all
    const failed = rows.filter((x) => x.status === 'failed').length;
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(rows.length / 2);
    // daily rollups per box and agent agree with the calls
    const db = new Database(r.dbPath, { readonly: true });
    const rollups = db.prepare('SELECT * FROM call_rollups').all() as { day: number; serial: string; agent_id: number; placed: number; completed: number; failed: number; talk_sec: number }[];
    db.close();
    expect(rollups.length).toBeGreaterThan(12);
    for (const ru of rollups) {
      const mine = rows.filter((x) => x.serial === ru.serial && x.agent_id === ru.agent_id && Math.floor(x.started_at / 86_400_000) === ru.day);
      expect(ru.placed).toBe(mine.length);
      expect(ru.completed).toBe(mine.filter((x) => x.status === 'completed').length);
      expect(ru.failed).toBe(mine.filter((x) => x.status === 'failed').length);
      expect(ru.talk_sec).toBe(mine.reduce((sum, x) => sum + (x.duration_sec ?? 0), 0));
    }
    expect(rollups.reduce((sum, ru) => sum + ru.placed, 0)).toBe(rows.length);
  });

  it('keeps numbers as a keyed hash and a masked form only, and no transcripts, unless configured', async () => {
    const r = await callsRig('{ per_page: 50 }', TRAFFIC, 6);
    await syncFor(r, 20 * M);
    const rows = dbCalls(r);
    expect(rows.length).toBeGreaterThan(20);
    const sim = new Map(simCalls(r).map((c) => [c.call_id, c]));
    for (const row of rows) {
      const to = sim.get(row.call_id)?.to ?? '';
      expect(row.to_number).toBeNull();
      expect(row.transcript).toBeNull();
      expect(row.variables).toBeNull();
      expect(row.to_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.to_masked).toBe(`${to.slice(0, 5)}•••${to.slice(-4)}`);
    }
    // the same number always gets the same hash, and the hash is keyed (not a plain SHA-256)
    const { createHash } = await import('node:crypto');
    const first = rows[0] as Row;
    expect(first.to_hash).not.toBe(createHash('sha256').update(sim.get(first.call_id)?.to ?? '').digest('hex'));
    // no number in clear anywhere in the database files
    await r.app.stop();
    const dir = dirname(r.dbPath);
    const bytes = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f)).toString('latin1'))
      .join('\n');
    for (const c of sim.values()) expect(bytes.includes(c.to.slice(1)), c.to).toBe(false);
  });

  it('stores numbers, transcripts and variables when enabled (read through call details)', async () => {
    const r = await callsRig('{ store_numbers: true, store_transcripts: true }', TRAFFIC, 4);
    await syncFor(r, 30 * M);
    const rows = dbCalls(r);
    const sim = new Map(r.sim.sim.calls.page(100_000, 1).items.map((c) => [String(c.id), c]));
    const completed = rows.filter((x) => x.status === 'completed');
    expect(completed.length).toBeGreaterThan(5);
    for (const row of completed) {
      const c = sim.get(row.call_id);
      expect(row.to_number).toBe(c?.to);
      expect(row.variables === null ? null : JSON.parse(row.variables)).toEqual(c?.variables);
      expect(row.transcript).toBe(c?.transcript);
      expect(row.recording).toBe('available');
    }
    expect(completed.some((x) => x.transcript !== null)).toBe(true);
  });

  it('refreshes calls still initiated through call details until they are final', async () => {
    // No safety window and long gaps between reads: calls that were initiated at the last read
    // are older than this read's stop, so only call details can finish them.
    const r = await callsRig('{ safety_window: 0s, per_page: 10 }', TRAFFIC, 8);
    const results = await syncFor(r, 40 * M, 5 * M);
    expect(results.some((x) => x.details > 0)).toBe(true);
    r.clock.advance(10 * M); // every call placed by the last read has ended
    await r.app.runCallsOnce();
    const lastReadBefore = r.clock.now() - 10 * M;
    const rows = new Map(dbCalls(r).map((x) => [x.call_id, x]));
    for (const c of simCalls(r).filter((x) => Date.parse(x.started_at) <= lastReadBefore)) {
      expect(rows.get(c.call_id)?.status, c.call_id).toBe(c.status);
    }
  });

  it('keeps a stuck call initiated and keeps asking about it within the request budget', async () => {
    const r = await callsRig('{ max_requests: 8, per_page: 100 }', `${TRAFFIC}  - { at: 0s, calls_stuck: { box: BX-00002 } }\n`, 4);
    const results = await syncFor(r, 60 * M, 5 * M);
    for (const x of results) expect(x.pages + x.details).toBeLessThanOrEqual(8);
    const stuck = dbCalls(r).filter((x) => x.serial === 'BX-00002');
    expect(stuck.length).toBeGreaterThan(5);
    expect(stuck.every((x) => x.status === 'initiated')).toBe(true);
    expect(results.slice(2).some((x) => x.details > 0)).toBe(true);
  });

  it('catches up a backlog bigger than one cycle over several cycles, with pages shifting under it', async () => {
    const r = await callsRig('{ max_requests: 4, per_page: 20, catch_up: 3h }', TRAFFIC, 20);
    // the daemon starts two hours into the traffic: ~1200 calls, 60 pages, 4 requests a cycle
    r.clock.advance(2 * H);
    const results = await syncFor(r, 50 * M);
    for (const x of results) expect(x.pages + x.details).toBeLessThanOrEqual(4);
    expect(results[0]?.complete).toBe(false);
    expect(results.at(-1)?.complete).toBe(true);
    const stored = new Set(dbCalls(r).map((x) => x.call_id));
    const lastRead = r.clock.now();
    const missing = simCalls(r).filter((c) => Date.parse(c.started_at) <= lastRead - M && !stored.has(c.call_id));
    expect(missing).toEqual([]);
  });

  it('after a gap longer than catch_up reads back only catch_up, and reports the gap', async () => {
    const r = await callsRig('{ catch_up: 1h, per_page: 100 }', TRAFFIC, 10);
    await syncFor(r, 5 * M);
    r.clock.advance(3 * H); // boxwatch was down
    const [res] = await syncFor(r, M);
    expect(res?.gapSkipped).not.toBeNull();
    expect(res?.gapSkipped?.to).toBe(r.clock.now() - H);
    const rows = dbCalls(r);
    const t = r.clock.now();
    expect(rows.some((x) => x.started_at > t - H)).toBe(true);
    expect(rows.some((x) => x.started_at > t - 3 * H && x.started_at < t - H - 10 * M)).toBe(false);
    const metrics = await r.app.metrics.text();
    expect(metrics).toMatch(/boxwatch_call_sync_gaps_skipped_total{account="default"} 1/);
  });

  it('survives 429, 503 and malformed call lists, and loses nothing', async () => {
    const r = await callsRig(
      '{ per_page: 20 }',
      `${TRAFFIC}  - { from: 10m, to: 14m, endpoints: [call_list], status: 503 }\n  - { from: 20m, to: 23m, endpoints: [call_list], status: 429, retry_after: 1s }\n  - { from: 30m, to: 33m, endpoints: [call_list, call_details], malformed_json: true }\n`,
      8,
    );
    const results = await syncFor(r, 50 * M);
    expect(results.filter((x) => x.outcome === 'failed').length).toBeGreaterThanOrEqual(6);
    expect(results.at(-1)?.outcome).toBe('ok');
    const stored = new Set(dbCalls(r).map((x) => x.call_id));
    const missing = simCalls(r).filter((c) => Date.parse(c.started_at) <= r.clock.now() && !stored.has(c.call_id));
    expect(missing).toEqual([]);
  });

  it('reads no calls without a calls: section', async () => {
    rig = await startRig({ devices: 4, yaml: RULES, scenario: TRAFFIC, sim: { historyCalls: 0 } });
    rig.clock.advance(10 * M);
    expect(await rig.app.runCallsOnce()).toBeUndefined();
    await rig.cycle();
    expect(dbCalls(rig)).toEqual([]);
    expect(rig.app.calls).toBeNull();
  });
});
