/**
 * Reliability: gateway faults. For each one the daemon keeps polling, records what happened,
 * raises the built-in gateway alert it should (and no per-box alert: an outage is not data), keeps
 * every box's history, and recovers by itself once the fault is gone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FaultSpec } from '../../src/sim/scenario.js';
import { KEY, startRig, subjects, type Rig } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Per-box alerts (anything but the gateway_* built-ins) ever recorded. */
const boxAlerts = (r: Rig): string[] => r.transitions().filter((t) => !t.startsWith('gateway_'));
const listAttempts = (r: Rig): string[] => r.attempts.filter((a) => a.endpoint === 'device_list').map((a) => a.outcome);

/** Every box of the simulator has a stored state that says it is connected. */
function expectFleetIntact(r: Rig): void {
  const stored = r.app.store.boxes();
  expect(stored).toHaveLength(r.sim.sim.fleet.boxes.length);
  for (const b of stored) {
    expect(b.missingSince).toBeNull();
    expect(b.connected).toBe(true);
  }
}

/**
 * The client's per-attempt timeout in these tests: what a faulty request waits for, and far above
 * what a healthy request takes even on a loaded machine (a healthy request that timed out would be
 * counted as a fault).
 */
const TIMEOUT_MS = 1_500;

/** A fault that comes and goes: `count` requests are hit, then the gateway answers normally. */
const TRANSIENT: [string, FaultSpec][] = [
  ['a latency spike longer than the timeout', { latencyMs: 4 * TIMEOUT_MS, count: 1 }],
  ['a request that never answers (hang)', { hang: true, count: 2 }],
  ['connection resets', { reset: true, count: 2 }],
  ['a burst of 503', { status: 503, count: 3 }],
  ['a burst of 500', { status: 500, count: 2 }],
  ['a 429 with Retry-After', { status: 429, retryAfterMs: 2_000, count: 1 }],
  ['a malformed JSON body', { malformedJson: true, count: 1 }],
];

/** A fault that lasts several cycles; the cycles fail with `code`. */
const PERSISTENT: [string, FaultSpec, string][] = [
  ['the gateway hangs', { hang: true }, 'unavailable'],
  ['connections are reset', { reset: true }, 'unavailable'],
  ['the gateway answers 502', { status: 502 }, 'unavailable'],
];

describe('gateway faults absorbed within a cycle', () => {
  it.each(TRANSIENT)('%s: retried within the cycle, which succeeds; no alert', async (_name, fault) => {
    rig = await startRig({ gatewayTimeoutMs: TIMEOUT_MS, retries: 3 });
    await rig.cycle(0);
    rig.sim.sim.inject({ ...fault, endpoints: ['device_list'] });
    await rig.cycle();
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'ok', 'ok']);
    const failedAttempts = listAttempts(rig).filter((o) => o !== 'ok');
    expect(failedAttempts.length).toBe(fault.count);
    expect(rig.transitions()).toEqual([]);
    expect(rig.smtp.messages).toHaveLength(0);
    expect(rig.slack.requests).toHaveLength(0);
    expectFleetIntact(rig);
  });
});

describe('gateway faults that outlast the retries', () => {
  it.each(PERSISTENT)('%s: failed cycles, one gateway_unreachable after 3, no box alert, recovery', async (_name, fault, code) => {
    rig = await startRig({ gatewayTimeoutMs: TIMEOUT_MS, retries: 1 });
    await rig.cycle(0);
    const remove = rig.sim.sim.inject(fault);
    for (let i = 0; i < 4; i++) await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', ...Array<string>(4).fill(`failed:${code}`)]);
    expect(subjects(rig)).toEqual([expect.stringMatching(/^\[FIRING\] critical: the gateway cannot be reached/)]);
    expect(rig.slack.received).toHaveLength(1);

    remove();
    await rig.cycle();
    await rig.cycle();
    expect(rig.cycles().slice(-2)).toEqual(['ok', 'ok']);
    expect(subjects(rig)[1]).toMatch(/^\[RESOLVED\] critical: the gateway answers again/);
    expect(rig.smtp.messages).toHaveLength(2);
    expect(boxAlerts(rig)).toEqual([]);
    expectFleetIntact(rig);
    // The failures are counted by endpoint and outcome.
    const metrics = await rig.app.metrics.text();
    expect(metrics).toMatch(new RegExp(`boxwatch_gateway_requests_total\\{endpoint="device_list",outcome="${code}"\\} 8`));
    expect(metrics).toMatch(/boxwatch_poll_cycles_total\{outcome="failed"\} 4/);
  });
});

describe('rate limiting', () => {
  it('a 429 with Retry-After: the next request waits at least that long', async () => {
    rig = await startRig();
    await rig.cycle(0);
    rig.sim.sim.inject({ status: 429, retryAfterMs: 5_000, count: 1, endpoints: ['device_list'] });
    await rig.cycle();
    const list = rig.attempts.filter((a) => a.endpoint === 'device_list');
    const limited = list.findIndex((a) => a.outcome === 'rate_limited');
    expect(limited).toBeGreaterThan(0);
    const next = list[limited + 1];
    expect(next?.outcome).toBe('ok');
    expect(next!.at - list[limited]!.at).toBeGreaterThanOrEqual(5_000);
    expect(rig.cycles()).toEqual(['ok', 'ok']);
  });

  it('a Retry-After longer than a cycle: no request before it ends, then polling resumes', async () => {
    rig = await startRig();
    await rig.cycle(0);
    const start = rig.sim.sim.start;
    const from = rig.clock.now() + 30_000 - start;
    rig.sim.sim.inject({ status: 429, retryAfterMs: 100_000, from, to: from + 100_000, endpoints: ['device_list'] });
    for (let i = 0; i < 5; i++) await rig.cycle();
    const list = rig.attempts.filter((a) => a.endpoint === 'device_list');
    const limitedAt = list.find((a) => a.outcome === 'rate_limited')!.at;
    // Exactly one request was refused; the next one came after the 100 s the gateway asked for.
    expect(list.filter((a) => a.outcome === 'rate_limited')).toHaveLength(1);
    const after = list.filter((a) => a.at > limitedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]!.at - limitedAt).toBeGreaterThanOrEqual(100_000);
    expect(after.every((a) => a.outcome === 'ok')).toBe(true);
    // The cycles in between failed without a request and are recorded as rate limited; the one
    // 10 s before the end waited those 10 s and then polled.
    expect(rig.cycles()).toEqual(['ok', 'failed:rate_limited', 'failed:rate_limited', 'failed:rate_limited', 'ok', 'ok']);
    // Three cycles without data: the gateway alert, resolved when polling resumed; nothing per box.
    expect(rig.transitions().filter((t) => /:(firing|resolved)$/.test(t))).toEqual(['gateway_unreachable::firing', 'gateway_unreachable::resolved']);
  });
});

describe('unexpected answers', () => {
  it('a schema-violating record: set aside, gateway_schema at once naming it, counted, the fleet polled, recovery', async () => {
    rig = await startRig();
    await rig.cycle(0);
    const remove = rig.sim.sim.inject({ schemaViolation: true, endpoints: ['device_list'] });
    await rig.cycle();
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'ok', 'ok']);
    expect(subjects(rig)).toEqual([expect.stringMatching(/^\[FIRING\] critical: gateway responses no longer have the expected shape/)]);
    expect(rig.smtp.messages[0]?.text).toContain('1 record set aside: (no serial): data[0]: serial_no: expected string');
    const metrics = await rig.app.metrics.text();
    expect(metrics).toMatch(/boxwatch_gateway_records_rejected_total 2/);
    expect(metrics).toMatch(/boxwatch_alerts_firing\{rule="gateway_schema",severity="critical"\} 1/);
    expect(rig.logs.filter((l) => l.msg.startsWith('invalid gateway record set aside'))).toHaveLength(1); // once, not per cycle

    remove();
    await rig.cycle();
    expect(rig.cycles().at(-1)).toBe('ok');
    expect(subjects(rig)[1]).toMatch(/^\[RESOLVED\] critical: gateway responses have the expected shape again/);
    expect(boxAlerts(rig)).toEqual([]);
    expectFleetIntact(rig);
  });

  it('malformed JSON that persists: failed cycles with code schema and gateway_schema, then recovery', async () => {
    rig = await startRig({ retries: 1 });
    await rig.cycle(0);
    const remove = rig.sim.sim.inject({ malformedJson: true, endpoints: ['device_list'] });
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'failed:schema']);
    expect(rig.transitions()).toEqual(['gateway_schema::firing']);
    remove();
    await rig.cycle();
    expect(rig.transitions()).toEqual(['gateway_schema::firing', 'gateway_schema::resolved']);
    expectFleetIntact(rig);
  });
});

describe('key rotation', () => {
  it('unauthorized at once; a restart with the new key in the configuration recovers', async () => {
    rig = await startRig();
    await rig.cycle(0);
    rig.sim.sim.rotateKey('the-rotated-account-key');
    await rig.cycle();
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'failed:unauthorized', 'failed:unauthorized']);
    expect(subjects(rig)).toEqual([expect.stringMatching(/^\[FIRING\] critical: the gateway rejects the account secret key/)]);
    // The key is in no e-mail, Slack message, log line or cycle record.
    const everything = [
      ...rig.smtp.messages.map((m) => m.text),
      ...rig.slack.requests.map((r) => JSON.stringify(r.body)),
      ...rig.logs.map((l) => JSON.stringify(l)),
      ...rig.cycles(),
      JSON.stringify(rig.app.store.lastCycle()),
    ].join('\n');
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain('the-rotated-account-key');

    // The operator puts the new key into the configuration and restarts.
    await rig.restart({ key: 'the-rotated-account-key' });
    await rig.cycle();
    expect(rig.cycles().at(-1)).toBe('ok');
    expect(subjects(rig)[1]).toMatch(/^\[RESOLVED\] critical: the gateway accepts the key again/);
    expect(boxAlerts(rig)).toEqual([]);
    expectFleetIntact(rig);
  });
});

describe('fleet size', () => {
  it('an empty fleet ("No connected devices found"): ok cycles with no boxes, no alert', async () => {
    rig = await startRig({ devices: 0 });
    await rig.cycle(0);
    await rig.cycle();
    expect(rig.cycles()).toEqual(['ok', 'ok']);
    expect(rig.app.store.lastCycle()).toMatchObject({ outcome: 'ok', boxes: 0 });
    expect(rig.app.store.boxes()).toEqual([]);
    expect(rig.transitions()).toEqual([]);
  });

  it('10,000 boxes: one cycle lists, details and stores every box', async () => {
    rig = await startRig({ devices: 10_000, concurrency: 32 });
    await rig.cycle(0);
    expect(rig.app.store.lastCycle()).toMatchObject({ outcome: 'ok', boxes: 10_000, detailsFetched: 10_000 });
    const stored = rig.app.store.boxes();
    expect(stored).toHaveLength(10_000);
    expect(new Set(stored.map((b) => b.serial)).size).toBe(10_000);
    expect(stored.every((b) => b.detailsAt !== null && b.connected)).toBe(true);
    expect(rig.transitions()).toEqual([]);
  }, 180_000); // a bound: 3 s on an idle machine, over a minute when other suites load it
});
