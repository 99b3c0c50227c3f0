import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { Simulator } from '../../src/sim/simulator.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { START, json, startTestSim } from './helpers.js';

const M = 60_000;
const H = 60 * M;

/** A simulator on a fake clock with background traffic from a scenario text. */
function simWith(text: string, devices = 20): { sim: Simulator; clock: FakeClock } {
  const clock = new FakeClock(START);
  const sim = new Simulator({ clock, devices, seed: 3, historyCalls: 0, scenario: parseScenario(text) });
  return { sim, clock };
}

/** Every call in the book as the list shows it at the simulator's time, oldest first. */
function allCalls(sim: Simulator) {
  const now = sim.sync();
  return sim.calls
    .page(1_000_000, 1)
    .items.reverse()
    .map((c) => ({ ...sim.calls.summaryAt(c, now) }));
}

const TRAFFIC = 'calls: { per_box_per_hour: 6, agents: [101, 102] }\n';

describe('simulator background call traffic', () => {
  it('places calls at about the configured rate, from the configured agents, only from connected boxes', () => {
    const { sim, clock } = simWith(`${TRAFFIC}timeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 1m, box: BX-00004, disconnect: true }\n`);
    clock.advance(2 * H);
    const calls = allCalls(sim);
    // 20 boxes x 6 an hour x 2 hours = 240 expected (one box offline after a minute)
    expect(calls.length).toBeGreaterThan(170);
    expect(calls.length).toBeLessThan(300);
    expect(new Set(calls.map((c) => c.agent_id))).toEqual(new Set([101, 102]));
    const fromFour = calls.filter((c) => c.from === 'box:BX-00004');
    expect(fromFour.every((c) => Date.parse(c.started_at) <= Date.parse(START) + M)).toBe(true);
    // every box that stayed online placed calls; outcomes come from the signal model
    expect(new Set(calls.map((c) => c.from)).size).toBeGreaterThanOrEqual(18);
    expect(calls.some((c) => c.status === 'completed')).toBe(true);
    // newest first in the list, oldest first here
    const times = calls.map((c) => Date.parse(c.started_at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('is the same for a seed whatever the pattern of requests', () => {
    const a = simWith(TRAFFIC);
    const b = simWith(TRAFFIC);
    for (let i = 0; i < 90; i++) {
      a.clock.advance(M);
      a.sim.sync(); // polled every minute
    }
    b.clock.advance(90 * M); // asked once at the end
    const key = (c: { call_id: string; from: string; to: string; started_at: string; status: string; agent_id: number }) =>
      `${c.call_id} ${c.from} ${c.to} ${c.started_at} ${c.status} ${c.agent_id}`;
    const callsA = allCalls(a.sim).map(key);
    expect(callsA.length).toBeGreaterThan(100);
    expect(allCalls(b.sim).map(key)).toEqual(callsA);
    // another seed gives other calls
    const otherClock = new FakeClock(START);
    const other = new Simulator({ clock: otherClock, devices: 20, seed: 4, historyCalls: 0, scenario: parseScenario(TRAFFIC) });
    otherClock.advance(90 * M);
    expect(allCalls(other).map(key)).not.toEqual(callsA);
  });

  it('keeps an idle box silent', () => {
    const { sim, clock } = simWith('calls: { per_box_per_hour: 30, idle: [BX-00002, "BX-0001*"] }\n');
    clock.advance(H);
    const from = new Set(allCalls(sim).map((c) => c.from));
    expect(from.has('box:BX-00001')).toBe(true);
    expect(from.has('box:BX-00002')).toBe(false);
    expect([...from].some((f) => f.startsWith('box:BX-0001'))).toBe(false);
  });

  it('calls_fail makes a box fail from a time on, and for: ends it', () => {
    const { sim, clock } = simWith(
      'calls: { per_box_per_hour: 60 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 0s, box: "BX-*", signal: -60 }\n  - { at: 30m, calls_fail: { box: BX-00007, rate: 1, for: 30m } }\n',
    );
    clock.advance(2 * H);
    const t0 = Date.parse(START);
    const calls = allCalls(sim).filter((c) => c.from === 'box:BX-00007' && c.status !== 'initiated');
    const within = (from: number, to: number) => calls.filter((c) => Date.parse(c.started_at) >= t0 + from && Date.parse(c.started_at) < t0 + to);
    const failedShare = (list: typeof calls) => list.filter((c) => c.status === 'failed').length / list.length;
    expect(within(30 * M, 60 * M).length).toBeGreaterThan(10);
    expect(failedShare(within(30 * M, 60 * M))).toBe(1);
    expect(failedShare(within(0, 30 * M))).toBeLessThan(0.5);
    expect(failedShare(within(60 * M, 120 * M))).toBeLessThan(0.5);
    // other boxes are unaffected
    const others = allCalls(sim).filter((c) => c.from !== 'box:BX-00007' && c.status !== 'initiated');
    expect(failedShare(others)).toBeLessThan(0.2);
  });

  it('calls_stuck keeps calls initiated for ever, over HTTP too', async () => {
    const scenario = parseScenario('calls: { per_box_per_hour: 60 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 10m, calls_stuck: { box: BX-00003 } }\n');
    const sim = await startTestSim({ scenario, historyCalls: 0 });
    sim.clock.advance(3 * H);
    const res = await sim.get('/call/list?per_page=100');
    expect(res.status).toBe(200);
    const stuck = allCalls(sim.sim).filter((c) => c.from === 'box:BX-00003' && Date.parse(c.started_at) >= Date.parse(START) + 10 * M);
    expect(stuck.length).toBeGreaterThan(50);
    expect(stuck.every((c) => c.status === 'initiated')).toBe(true);
    const first = stuck[0];
    const details = await json(await sim.get(`/call/${first?.call_id}`));
    expect(details.data).toMatchObject({ status: 'initiated', from: 'box:BX-00003' });
    expect((details.data as Record<string, unknown>).ended_at).toBeUndefined();
  });

  it('recording_ttl shortens how long recordings stay downloadable', async () => {
    const scenario = parseScenario('calls: { per_box_per_hour: 60 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 0s, box: "BX-*", signal: -60 }\n  - { at: 1h, recording_ttl: 2m }\n');
    const sim = await startTestSim({ scenario, historyCalls: 0 });
    sim.clock.advance(70 * M);
    const now = sim.sim.sync();
    const ended = sim.sim.calls
      .page(100_000, 1)
      .items.filter((c) => c.recordingToken !== null && c.endedAt <= now);
    const recent = ended.filter((c) => now - c.endedAt < 2 * M);
    const older = ended.filter((c) => now - c.endedAt > 3 * M && now - c.endedAt < 50 * M);
    expect(recent.length).toBeGreaterThan(0);
    expect(older.length).toBeGreaterThan(0);
    for (const c of recent) expect((await sim.get(`/call/${c.id}`).then(json)).data).toHaveProperty('audio_record_url');
    const gone = (await sim.get(`/call/${older[0]?.id}`).then(json)).data as Record<string, unknown>;
    expect(gone.audio_record_url).toBeUndefined();
    const recording = await fetch(`${sim.url}/recordings/${older[0]?.recordingToken}.wav`);
    expect(recording.status).toBe(404);
  });

  it.each([
    ['timeline:\n  - { at: 1m, calls_fail: { rate: 0.5 } }\n', 'timeline[0].calls_fail.box', /names the boxes/],
    ['timeline:\n  - { at: 1m, calls_fail: { box: BX-00001, rate: 2 } }\n', 'timeline[0].calls_fail.rate', /./],
    ['timeline:\n  - { calls_stuck: { box: BX-00001 } }\n', 'timeline[0].at', /needs `at`/],
    ['timeline:\n  - { at: 1m, recording_ttl: 5m, box: BX-00001 }\n', 'timeline[0].box', /not allowed with recording_ttl/],
    ['calls: { per_box_per_hour: -1 }\n', 'calls.per_box_per_hour', /./],
    ['calls: { per_box_per_hour: 6, colour: red }\n', 'calls', /colour/],
  ])('rejects %j naming the field', (text, path, message) => {
    let issues: { path: string; message: string }[] = [];
    try {
      parseScenario(text);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      issues = err.issues;
    }
    expect(issues).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it('names a call event whose boxes match nothing', () => {
    const scenario = parseScenario('timeline:\n  - { at: 1m, calls_fail: { box: BX-09999, rate: 1 } }\n');
    expect(() => new Simulator({ clock: new FakeClock(START), devices: 5, scenario })).toThrow(ConfigError);
    try {
      new Simulator({ clock: new FakeClock(START), devices: 5, scenario });
    } catch (err) {
      expect((err as ConfigError).issues[0]?.path).toBe('timeline[0].calls_fail.box');
    }
  });
});
