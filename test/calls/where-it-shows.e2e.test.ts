/**
 * Where call health shows: `boxwatch calls stats` and the status table's failure-rate column
 * (the CLI in-process on the daemon's database), `/api/calls` and `/api/boxes/:serial/calls`
 * and `/metrics` over real HTTP. The daemon reads the simulator's background calls over HTTP;
 * one box's calls fail from 20 minutes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rig } from '../e2e/harness.js';
import { runCommand } from '../helpers/cli.js';
import type { CallStatsJson } from '../../src/views/calls.js';
import { startCallsRig } from './rig.js';

const M = 60_000;
let rig: Rig;
let base: string;
/** Every destination number the simulator dialled. */
let numbers: string[];

beforeAll(async () => {
  // The CLI measures its windows from this machine's clock: the hour of calls ends about now.
  rig = await startCallsRig({
    start: Math.floor(Date.now() / 60_000) * 60_000 - 80 * M,
    minutes: 80,
    timeline: ['{ at: 5m, calls_stuck: { box: BX-00005 } }'],
  });
  base = rig.app.httpUrl as string;
  numbers = rig.sim.sim.calls.page(100_000, 1).items.map((c) => c.to);
}, 120_000);

afterAll(async () => {
  await rig.close();
});

async function get(path: string): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await fetch(`${base}${path}`);
  const text = await res.text();
  return { status: res.status, text, body: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

type StatsRow = CallStatsJson;

describe('boxwatch calls stats', () => {
  it('per box: placed, completed, failed %, stuck and median duration, from the database', async () => {
    const r = await runCommand(['calls', 'stats', '--db', rig.dbPath, '--format', 'json']);
    expect(r.code).toBe(0);
    const { rows, total } = JSON.parse(r.out) as { rows: StatsRow[]; total: { placed: number } };
    const bx3 = rows.find((x) => x.box === 'BX-00003') as StatsRow;
    expect(bx3.failed).toBeGreaterThan(5);
    expect(bx3.failedPercent).toBeGreaterThan(40);
    const bx5 = rows.find((x) => x.box === 'BX-00005') as StatsRow;
    expect(bx5.stuck).toBeGreaterThan(2); // initiated longer than an hour (stuck_after's default without a configuration)
    const healthy = rows.find((x) => x.box === 'BX-00001') as StatsRow;
    expect(healthy.failedPercent).toBeLessThan(30);
    expect(healthy.medianDurationSec).toBeGreaterThan(10);
    const db = rig.app.store.calls.list({ limit: 100_000 });
    expect(total.placed).toBe(db.length);
    expect(bx3.placed).toBe(db.filter((c) => c.serial === 'BX-00003').length);
    expect(bx3.failed).toBe(db.filter((c) => c.serial === 'BX-00003' && c.status === 'failed').length);

    const table = await runCommand(['calls', 'stats', '--db', rig.dbPath]);
    expect(table.out.split('\n')[0]).toMatch(/^BOX\s+PLACED\s+TEST\s+COMPLETED\s+FAILED\s+FAILED %\s+STUCK\s+MEDIAN\s+ARCHIVED\s+LOST$/);
    expect(table.out).toMatch(new RegExp(`BX-00003\\s+${bx3.placed}\\s+0\\s+${bx3.completed}\\s+${bx3.failed}\\s+${bx3.failedPercent}%`));
  });

  it('per agent, over a chosen time; bad arguments are one line and exit 2', async () => {
    const r = await runCommand(['calls', 'stats', '--db', rig.dbPath, '--by', 'agent', '--since', '10m', '--format', 'json']);
    expect(r.code).toBe(0);
    const { rows } = JSON.parse(r.out) as { rows: StatsRow[] };
    expect(rows.map((x) => x.agent).every((a) => [101, 102, 103, 104].includes(a as number))).toBe(true);
    const all = JSON.parse((await runCommand(['calls', 'stats', '--db', rig.dbPath, '--by', 'agent', '--format', 'json'])).out) as { rows: StatsRow[] };
    expect(rows.reduce((n, x) => n + x.placed, 0)).toBeLessThan(all.rows.reduce((n, x) => n + x.placed, 0));

    const bad = await runCommand(['calls', 'stats', '--db', rig.dbPath, '--by', 'site']);
    expect(bad.code).toBe(2);
    expect(bad.err).toBe('error: --by must be box or agent, not "site"\nsee boxwatch calls stats --help\n');
    const badSince = await runCommand(['calls', 'stats', '--db', rig.dbPath, '--since', 'soon']);
    expect(badSince.code).toBe(2);
    expect(badSince.err).toContain('--since');
  });

  it('status has a failure-rate column (the last 24 hours)', async () => {
    const r = await runCommand(['status', '--db', rig.dbPath]);
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/CALLS FAILED/);
    const db = rig.app.store.calls.list({ serial: 'BX-00003', limit: 10_000 }).filter((c) => c.status !== 'initiated');
    const failed = db.filter((c) => c.status === 'failed').length;
    const pct = Math.round((1000 * failed) / db.length) / 10;
    expect(lines.find((l) => l.startsWith('BX-00003'))).toContain(`${pct}% of ${db.length}`);
    const json = JSON.parse((await runCommand(['status', '--db', rig.dbPath, '--format', 'json'])).out) as { serial: string; calls24h: { calls: number; failed: number } | null }[];
    expect(json.find((b) => b.serial === 'BX-00003')?.calls24h).toEqual({ calls: db.length, failed });
  });
});

describe('the call API', () => {
  it('/api/calls lists calls newest first, filtered by box, with masked numbers only', async () => {
    const r = await get('/api/calls?box=BX-00003&limit=5&since=1h');
    expect(r.status).toBe(200);
    const calls = r.body['calls'] as { callId: string; box: string; startedAt: string; to: string; status: string }[];
    expect(calls).toHaveLength(5);
    expect(calls.every((c) => c.box === 'BX-00003')).toBe(true);
    const times = calls.map((c) => Date.parse(c.startedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(calls[0]?.to).toMatch(/^\+\d{4}•••\d{4}$/);
    for (const n of numbers) expect(r.text).not.toContain(n.slice(1));
    expect(r.text).not.toMatch(/toNumber|transcript|variables/);
    const all = await get('/api/calls?limit=1000');
    expect((all.body['calls'] as unknown[]).length).toBe(rig.app.store.calls.list({ limit: 100_000, since: Date.parse(all.body['from'] as string) }).length);
  });

  it('/api/boxes/:serial/calls has the failure share per time bucket and the box calls', async () => {
    const r = await get('/api/boxes/BX-00003/calls?since=1h');
    expect(r.status).toBe(200);
    const buckets = r.body['buckets'] as { t: string; calls: number; failed: number; failedPercent: number | null }[];
    expect(r.body['bucketMs']).toBe(5 * M);
    expect(buckets).toHaveLength(12);
    // failing from 20 minutes on: the last hour's buckets are all failures
    const late = buckets.slice(-6).filter((b) => b.calls > 0);
    expect(late.length).toBeGreaterThan(2);
    expect(late.every((b) => b.failedPercent === 100)).toBe(true);
    const boxCalls = r.body['calls'] as { box: string }[];
    expect(boxCalls.length).toBeGreaterThan(5);
    expect(boxCalls.every((c) => c.box === 'BX-00003')).toBe(true);
  });

  it('answers 400 naming a bad parameter', async () => {
    for (const [path, parameter] of [
      ['/api/calls?limit=0', 'limit'],
      ['/api/calls?since=soon', 'since'],
      ['/api/calls?colour=red', 'colour'],
      ['/api/boxes/BX-00003/calls?limit=abc', 'limit'],
    ] as const) {
      const r = await get(path);
      expect(r.status, path).toBe(400);
      expect(r.body['parameter'], path).toBe(parameter);
    }
  });
});

describe('/metrics', () => {
  it('counts calls by box and final status', async () => {
    const r = await get('/metrics');
    const failed = /boxwatch_calls_total\{serial="BX-00003",status="failed"\} (\d+)/.exec(r.text);
    expect(Number(failed?.[1])).toBe(rig.app.store.calls.list({ serial: 'BX-00003', limit: 100_000 }).filter((c) => c.status === 'failed').length);
    expect(r.text).toMatch(/boxwatch_calls_total\{serial="BX-00001",status="completed"\} [1-9]/);
  });
});
