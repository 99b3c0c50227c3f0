/**
 * Test calls end to end: the simulator over real HTTP (its call book counts every make-call),
 * the daemon (createApp) on a real SQLite file with the fake clock, alerts delivered to a real
 * Slack receiver and a real SMTP server. Each schedule tick is driven by runTestCallsOnce(); every
 * simulated minute a call sync, a poll cycle and a delivery pass run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/cli.js';
import { fileRows } from '../helpers/sqlite.js';
import { callMinutes, slackTexts, startRig, type Rig } from '../e2e/harness.js';

const M = 60_000;
const PHONE = '+14155550123';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function yaml(testCalls: string): string {
  return `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s }
calls: { per_page: 100 }
test_calls:
${testCalls}`;
}

const ENTRY = `  - { name: path-check, boxes: [BX-00001, BX-00002], to: "${PHONE}", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 2, total: 3 }, timeout: 10m, severity: warning }\n`;

async function testCallRig(options: { entry?: string; scenario?: string; http?: boolean; start?: number } = {}): Promise<Rig> {
  rig = await startRig({
    devices: 4,
    seed: 9,
    yaml: yaml(options.entry ?? ENTRY),
    scenario: `timeline:\n  - { at: 0s, box: "BX-*", connect: true }\n${options.scenario ?? ''}`,
    sim: { historyCalls: 0 },
    ...(options.http && { http: {} }),
    ...(options.start !== undefined && { start: options.start }),
  });
  await rig.cycle(); // the fleet is known
  return rig;
}

const minutes = callMinutes;

/** The calls the simulator received from make-call to the test number, by box. */
function simTestCalls(r: Rig, serial?: string): number {
  let n = 0;
  for (let page = 1; ; page++) {
    const { items, hasNext } = r.sim.sim.calls.page(100, page);
    n += items.filter((c) => c.to === PHONE && (serial === undefined || c.from === `box:${serial}`)).length;
    if (!hasNext) return n;
  }
}

function slackAbout(r: Rig, serial: string): string[] {
  return r.slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => t.includes('test call') && t.includes(serial));
}

function dbRows<T>(r: Rig, sql: string, ...params: unknown[]): T[] {
  return fileRows<T>(r.dbPath, sql, ...params);
}

describe('test calls', () => {
  it('a scheduled test call is placed, followed to its end and recorded like any call', async () => {
    // an hour ago: `calls stats` reads the last 24 hours of the wall clock
    const r = await testCallRig({ scenario: '  - { at: 0s, calls_fail: { box: "BX-*", rate: 0 } }\n', http: true, start: Date.now() - 3_600_000 });
    const attempts = await r.app.runTestCallsOnce();
    expect(attempts.map((a) => [a.serial, a.outcome])).toEqual([
      ['BX-00001', 'placed'],
      ['BX-00002', 'placed'],
    ]);
    expect(simTestCalls(r, 'BX-00001')).toBe(1);
    expect(simTestCalls(r, 'BX-00002')).toBe(1);
    expect(simTestCalls(r)).toBe(2);

    await minutes(r, 6);
    const callId = (attempts[0] as { callId: string }).callId;
    const [row] = dbRows<{ status: string; to_masked: string; to_number: string | null; agent_id: number }>(r, 'SELECT * FROM calls WHERE call_id = ?', callId);
    expect(row).toMatchObject({ status: 'completed', to_masked: '+1415•••0123', to_number: null, agent_id: 101 });
    expect(dbRows(r, 'SELECT entry, serial, state FROM test_calls WHERE call_id = ?', callId)).toEqual([{ entry: 'path-check', serial: 'BX-00001', state: 'placed' }]);
    // the number in clear is nowhere in the database file
    expect(dbRows(r, `SELECT count(*) AS n FROM calls WHERE to_masked LIKE '%5550%' OR coalesce(to_number, '') <> ''`)).toEqual([{ n: 0 }]);

    // /api/calls shows it, marked as a test call, with the masked number
    const api = (await (await fetch(`${r.app.httpUrl}/api/calls?box=BX-00001`)).json()) as { calls: { callId: string; to: string; testCall?: string; status: string }[] };
    expect(api.calls.find((c) => c.callId === callId)).toMatchObject({ to: '+1415•••0123', testCall: 'path-check', status: 'completed' });
    // `calls stats` counts them among the box's calls, and says how many were test calls
    const stats = await runCommand(['calls', 'stats', '--db', r.dbPath, '--format', 'json']);
    const rows = (JSON.parse(stats.out) as { rows: { box: string; placed: number; testCalls: number; completed: number }[] }).rows;
    expect(rows.find((x) => x.box === 'BX-00001')).toMatchObject({ placed: 1, testCalls: 1, completed: 1 });
    expect(rows.find((x) => x.box === 'BX-00003')).toBeUndefined(); // not selected: no call
    // a completed test call raises nothing
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00001')).toBeUndefined();
    expect(r.slack.received).toHaveLength(0);
  });

  it('a failing test call raises test_call_failed once, and it resolves on the next successful one', async () => {
    const r = await testCallRig({ scenario: '  - { at: 0s, calls_fail: { box: BX-00001, rate: 1, for: 30m } }\n  - { at: 0s, calls_fail: { box: BX-00002, rate: 0 } }\n', entry: ENTRY.replace('per_box: 2, total: 3', 'per_box: 5, total: 10') });
    await r.app.runTestCallsOnce();
    await minutes(r, 6);
    const state = (await r.app.alerts.states()).get('test_call_failed\u0000BX-00001');
    expect(state).toMatchObject({ status: 'firing', severity: 'warning', value: 'failed' });
    expect(state?.summary).toMatch(/^test call \d+ \(path-check\) failed$/);
    expect(slackAbout(r, 'BX-00001')).toHaveLength(1);
    expect(slackAbout(r, 'BX-00001')[0]).toMatch(/FIRING/);
    expect(r.smtp.messages.filter((m) => m.subject.includes('BX-00001'))).toHaveLength(1);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00002')).toBeUndefined(); // its call completed

    // A second failing test call: the alert stays firing, nothing new is said.
    r.clock.advance(10 * M);
    await r.app.runTestCallsOnce();
    await minutes(r, 6);
    expect(slackAbout(r, 'BX-00001')).toHaveLength(1);

    // After 30m the box's calls succeed again: the next test call resolves the alert.
    r.clock.advance(15 * M);
    await r.app.runTestCallsOnce();
    await minutes(r, 6);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00001')?.status).not.toBe('firing');
    const told = slackAbout(r, 'BX-00001');
    expect(told).toHaveLength(2);
    expect(told[1]).toMatch(/RESOLVED/);
    expect(r.slack.received).toHaveLength(2);
    expect(simTestCalls(r)).toBe(6);
  });

  it('a test call that never completes fails after its timeout', async () => {
    const r = await testCallRig({ scenario: '  - { at: 0s, calls_stuck: { box: BX-00002 } }\n  - { at: 0s, calls_fail: { box: BX-00001, rate: 0 } }\n' });
    await r.app.runTestCallsOnce();
    await minutes(r, 9);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00002')).toBeUndefined(); // still within 10m
    await minutes(r, 3);
    const state = (await r.app.alerts.states()).get('test_call_failed\u0000BX-00002');
    expect(state?.status).toBe('firing');
    expect(state?.summary).toMatch(/not completed within 10m \(still initiated\)/);
    expect(slackAbout(r, 'BX-00002')).toHaveLength(1);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00001')).toBeUndefined();
  });

  it('a disconnected box gets no test call, and why is recorded', async () => {
    const r = await testCallRig({ scenario: '  - { at: 0s, box: BX-00002, disconnect: true }\n' });
    // BX-00001 is connected at the poll but disconnects before the tick: the fresh check refuses it too.
    r.sim.sim.fleet.apply(r.sim.sim.fleet.match('BX-00001'), { kind: 'disconnect' });
    const attempts = await r.app.runTestCallsOnce();
    expect(attempts.map((a) => [a.serial, a.outcome])).toEqual([
      ['BX-00001', 'skipped'],
      ['BX-00002', 'skipped'],
    ]);
    expect(simTestCalls(r)).toBe(0);
    const rows = dbRows<{ serial: string; state: string; reason: string }>(r, 'SELECT serial, state, reason FROM test_calls ORDER BY serial');
    expect(rows.map((x) => [x.serial, x.state])).toEqual([
      ['BX-00001', 'skipped'],
      ['BX-00002', 'skipped'],
    ]);
    expect(rows[0]?.reason).toMatch(/BX-00001 .* is disconnected/);
    expect(rows[1]?.reason).toBe('box BX-00002 was disconnected at the last poll');
    // skipped attempts spend nothing: the caps are untouched
    await minutes(r, 3);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000BX-00001')).toBeUndefined();
  });

  it('the daily caps hold per box and per entry, across a restart, until the next UTC day', async () => {
    const r = await testCallRig({ scenario: '  - { at: 0s, calls_fail: { box: "BX-*", rate: 0 } }\n' });
    expect((await r.app.runTestCallsOnce()).map((a) => a.outcome)).toEqual(['placed', 'placed']);
    const second = await r.app.runTestCallsOnce();
    expect(second.map((a) => a.outcome)).toEqual(['placed', 'skipped']); // total 3 reached
    expect(second[1]).toMatchObject({ skip: 'cap' });
    await r.restart();
    r.clock.advance(M);
    await r.app.runOnce();
    expect((await r.app.runTestCallsOnce()).map((a) => a.outcome)).toEqual(['skipped', 'skipped']);
    expect(simTestCalls(r)).toBe(3);
    // the next UTC day (the rig starts at 12:00Z)
    r.clock.advance(12 * 3_600_000);
    await r.app.runOnce();
    expect((await r.app.runTestCallsOnce()).map((a) => a.outcome)).toEqual(['placed', 'placed']);
    expect(simTestCalls(r)).toBe(5);
  });
});
