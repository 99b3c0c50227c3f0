/**
 * `boxwatch call`, `boxwatch calls list` and `boxwatch calls show`, run in-process with runCli
 * against the simulator over real HTTP: output, filters, paging, refusals (exit 1) and every
 * usage error (exit 2, no request).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { registerCall } from '../src/cli/call.js';
import { registerCalls } from '../src/cli/calls.js';
import { callSchema, callSummarySchema } from '../src/gateway/schemas.js';
import { MESSAGES } from '../src/gateway/messages.js';
import { SIM_MESSAGES } from '../src/sim/messages.js';
import { startSimulator, type RunningSimulator } from '../src/sim/server.js';
import { DEV_KEY } from '../src/sim/simulator.js';
import { runCommand, type CliRun } from './helpers/cli.js';
import { FakeClock } from './helpers/fake-clock.js';
import { startLocalServer } from './gateway/local-server.js';

const KEY = 'cli-test-secret-93af17';
const PHONE = '+14155550123';

const running: RunningSimulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

/** A simulator whose simulated time starts at real now (so `--since` compares with real time). */
async function sim(options: { key?: string; devices?: number } = {}): Promise<RunningSimulator> {
  const s = await startSimulator({ port: 0, key: options.key ?? KEY, devices: options.devices ?? 10, seed: 5, clock: new FakeClock(Date.now()) });
  running.push(s);
  return s;
}

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const result = await runCommand(argv, env, [registerCall, registerCalls]);
  expect(result.out + result.err).not.toContain(KEY);
  return result;
}

const envFor = (s: RunningSimulator): NodeJS.ProcessEnv => ({ BOXWATCH_GATEWAY_URL: s.url, BOXWATCH_SECRET_KEY: KEY });
const connectedSerial = (s: RunningSimulator): string => s.sim.fleet.boxes.find((b) => b.connected)?.serial ?? '';

describe('boxwatch call', () => {
  it('places a call from a connected box and prints it', async () => {
    const s = await sim();
    const serial = connectedSerial(s);
    const r = await run(['call', '--from', `box:${serial}`, '--to', PHONE, '--agent', '101'], envFor(s));
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(/^CALL ID\s+STATUS\s+FROM\s+TO\s+AGENT\n\d+\s+initiated\s+box:\S+\s+\+14155550123\s+101\n$/);
    const json = await run(['call', '--from', `box:${serial}`, '--to', PHONE, '--agent', '102', '--format', 'json', '--gateway', s.url], {
      BOXWATCH_SECRET_KEY: KEY,
    });
    expect(JSON.parse(json.out)).toMatchObject({ status: 'initiated', agent_id: 102, from: `box:${serial}`, to: PHONE });
  });

  it('refuses a disconnected box (exit 1) without placing a call, escaping the box name', async () => {
    const s = await sim();
    const box = s.sim.fleet.boxes.find((b) => b.connected);
    if (!box) throw new Error('no connected box');
    box.name = 'Lobby\u001b[31m';
    s.sim.fleet.apply([box], { kind: 'disconnect' });
    const before = s.sim.calls.size;
    const r = await run(['call', '--from', `box:${box.serial}`, '--to', PHONE, '--agent', '101'], envFor(s));
    expect(r.code).toBe(1);
    expect(r.err).toContain(`error [box_disconnected]: box ${box.serial} ("Lobby\\x1b[31m") is disconnected`);
    expect(r.err).toContain('not placing the call');
    expect(r.err).not.toContain('\u001b');
    expect(s.sim.calls.size).toBe(before);
  });

  it('refuses an unknown box (exit 1)', async () => {
    const s = await sim();
    const r = await run(['call', '--from', 'box:NOPE-7', '--to', PHONE, '--agent', '101'], envFor(s));
    expect(r.code).toBe(1);
    expect(r.err).toContain('error [box_not_found]: box NOPE-7 is not known to the gateway');
  });

  it('reports the gateway refusing the agent (exit 1)', async () => {
    const s = await sim();
    const r = await run(['call', '--from', `box:${connectedSerial(s)}`, '--to', PHONE, '--agent', '105'], envFor(s));
    expect(r.code).toBe(1);
    expect(r.err).toBe(`error [invalid_agent]: ${SIM_MESSAGES.invalidAgent}\n`);
  });

  it('reports a wrong key as unauthorized (exit 1) without printing it', async () => {
    const s = await sim({ key: 'another-key' });
    const r = await run(['calls', 'show', '100001'], envFor(s));
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `error [unauthorized]: ${MESSAGES.unauthorized}\n` +
        'the gateway refused the account key: check gateway.secret_key in the configuration, usually taken from the BOXWATCH_SECRET_KEY environment variable\n',
    );
  });

  it('uses the development key for a local simulator when no key is set', async () => {
    const s = await startSimulator({ port: 0, devices: 3, seed: 5, clock: new FakeClock(Date.now()) });
    running.push(s);
    expect(DEV_KEY).toBeTruthy();
    const r = await run(['calls', 'list', '--gateway', s.url.replace('127.0.0.1', 'localhost')], {});
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^CALL ID/);
  });

  it('reports an unreachable gateway (exit 1)', async () => {
    const s = await sim();
    const url = s.url;
    await s.close();
    const r = await run(['calls', 'list'], { BOXWATCH_GATEWAY_URL: url, BOXWATCH_SECRET_KEY: KEY });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error \[unavailable\]: gateway unreachable \(call_list\): .*ECONNREFUSED/);
  });
});

describe('boxwatch calls list', () => {
  it('shows the newest 20 calls as a table and notes that more exist', async () => {
    const s = await sim();
    const r = await run(['calls', 'list'], envFor(s));
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CALL ID\s+STATUS\s+STARTED\s+DURATION\s+AGENT\s+FROM\s+TO$/);
    expect(lines).toHaveLength(21);
    expect(r.err).toMatch(/^note: showing the first 20 matching calls; more calls may match \(use --all\)\n$/);
  });

  it('reads every page with --all and prints JSON newest first', async () => {
    const s = await sim();
    const r = await run(['calls', 'list', '--all', '--per-page', '7', '--format', 'json'], envFor(s));
    expect(r).toMatchObject({ code: 0, err: '' });
    const calls = callSummarySchema.array().parse(JSON.parse(r.out));
    expect(calls).toHaveLength(s.sim.calls.size);
    expect(new Set(calls.map((c) => c.call_id)).size).toBe(calls.length);
    const starts = calls.map((c) => Date.parse(c.started_at));
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
  });

  it('filters by status, agent, box and start time across pages', async () => {
    const s = await sim();
    const all = callSummarySchema
      .array()
      .parse(JSON.parse((await run(['calls', 'list', '--all', '--format', 'json'], envFor(s))).out));
    const sample = all[all.length - 1];
    if (!sample) throw new Error('no calls');
    const serial = sample.from.slice(4);
    const cutoff = Date.now() - 6 * 3_600_000;
    const cases: [string[], (c: (typeof all)[number]) => boolean][] = [
      [['--status', 'COMPLETED'], (c) => c.status === 'completed'],
      [['--agent', String(sample.agent_id)], (c) => c.agent_id === sample.agent_id],
      [['--box', serial], (c) => c.from === `box:${serial}`],
      [['--box', `box:${serial}`, '--status', sample.status], (c) => c.from === `box:${serial}` && c.status === sample.status],
      [['--since', '6h'], (c) => Date.parse(c.started_at) >= cutoff],
    ];
    for (const [args, keep] of cases) {
      const r = await run(['calls', 'list', '--all', '--per-page', '9', '--format', 'json', ...args], envFor(s));
      expect(r.code).toBe(0);
      const got = (JSON.parse(r.out) as { call_id: string }[]).map((c) => c.call_id);
      const want = all.filter(keep).map((c) => c.call_id);
      expect(want.length).toBeGreaterThan(0);
      expect(got).toEqual(want);
    }
  });

  it('says so when nothing matches', async () => {
    const s = await sim();
    const r = await run(['calls', 'list', '--status', 'no-such-status', '--limit', '5'], envFor(s));
    expect(r).toMatchObject({ code: 0, out: 'no matching calls\n' });
  });
});

describe('boxwatch calls show', () => {
  it('shows a call as a field table and as JSON', async () => {
    const s = await sim();
    const r = await run(['calls', 'show', '100001'], envFor(s));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^FIELD\s+VALUE\ncall_id\s+100001\nstatus\s+\w+\ndirection\s+outbound\n/);
    const json = await run(['calls', 'show', '100001', '--format', 'json'], envFor(s));
    expect(callSchema.parse(JSON.parse(json.out)).call_id).toBe('100001');
  });

  it('reports an unknown call (exit 1)', async () => {
    const s = await sim();
    const r = await run(['calls', 'show', '42'], envFor(s));
    expect(r.code).toBe(1);
    expect(r.err).toBe(`error [call_not_found]: ${MESSAGES.callNotFound}\n`);
  });
});

describe('usage errors: exit 2, a clear message, no request', () => {
  const from = 'box:BX-00001';
  const cases: [string, string[], NodeJS.ProcessEnv | null, RegExp][] = [
    ['from not a serial', ['call', '--from', 'box:a b', '--to', PHONE, '--agent', '101'], null, /--from must be a box serial, SERIAL, box:SERIAL or ACCOUNT\/SERIAL/],
    ['to not E.164', ['call', '--from', from, '--to', '4155550123', '--agent', '101'], null, /--to must be an E\.164 phone number/],
    ['agent not an integer', ['call', '--from', from, '--to', PHONE, '--agent', 'sales'], null, /--agent must be a positive integer, got "sales"/],
    ['missing --to', ['call', '--from', from, '--agent', '101'], null, /required option '--to <number>' not specified/],
    ['bad format', ['call', '--from', from, '--to', PHONE, '--agent', '1', '--format', 'xml'], null, /argument 'xml' is invalid/],
    ['gateway not a URL', ['calls', 'list', '--gateway', 'not a url'], null, /invalid gateway URL "not a url"/],
    ['gateway not http', ['calls', 'list', '--gateway', 'ftp://127.0.0.1/'], null, /use http:\/\/ or https:\/\//],
    ['no key for a remote gateway', ['calls', 'list', '--gateway', 'https://gateway.example.com'], {}, /BOXWATCH_SECRET_KEY is not set/],
    ['per-page 0', ['calls', 'list', '--per-page', '0'], null, /--per-page must be a positive integer, got "0"/],
    ['per-page text', ['calls', 'list', '--per-page', 'ten'], null, /--per-page must be a positive integer/],
    ['limit negative', ['calls', 'list', '--limit', '-3'], null, /--limit must be a positive integer/],
    ['limit with all', ['calls', 'list', '--all', '--limit', '3'], null, /--limit and --all cannot be combined/],
    ['agent filter', ['calls', 'list', '--agent', 'x'], null, /--agent must be a positive integer/],
    ['box filter', ['calls', 'list', '--box', 'a b'], null, /--box must be a box serial/],
    ['since', ['calls', 'list', '--since', 'yesterday'], null, /--since must be a duration/],
    ['empty status', ['calls', 'list', '--status', ' '], null, /--status must not be empty/],
    ['show id', ['calls', 'show', 'abc'], null, /call id must be an integer or ACCOUNT\/INTEGER, got "abc"/],
    ['show without id', ['calls', 'show'], null, /missing required argument 'id'/],
    ['unknown option', ['calls', 'list', '--colour'], null, /unknown option '--colour'/],
  ];
  it.each(cases)('%s', async (_name, argv, env, message) => {
    const gateway = await startLocalServer((_req, res) => res.end('{}'));
    try {
      const r = await run(argv, env ?? { BOXWATCH_GATEWAY_URL: gateway.url, BOXWATCH_SECRET_KEY: KEY });
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toMatch(message);
      expect(gateway.requests).toEqual([]);
    } finally {
      await gateway.close();
    }
  });
});
