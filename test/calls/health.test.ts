/**
 * The call rules over a real SQLite file: calls written through the calls repository, the facts
 * read back (src/rules/facts.ts) and judged by the rules (src/rules/), and the configuration of
 * the call rules (defaults, hysteresis bounds, the calls: section they need).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCallFacts } from '../../src/rules/facts.js';
import type { CallObservation, CallsRepo } from '../../src/domain/calls.js';
import { parseConfig, type Config, type RuleConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { evaluateFleetRule, evaluateRule, fleetContext, isFleetRule } from '../../src/rules/index.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { box } from '../rules/helpers.js';
import { callObservation } from '../helpers/calls.js';

const M = 60_000;
const H = 60 * M;
const D = 24 * H;
const NOW = Date.parse('2026-03-10T12:00:00Z');

function config(rules: string): Config {
  return parseConfig(`gateway: { secret_key: k }\ncalls: {}\nrules:\n${rules}`, {});
}

let dir: string;
let store: SqliteStore;
let repo: CallsRepo;
let seq = 0;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-callhealth-'));
  store = openStore(join(dir, 'b.db'));
  repo = store.calls;
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Stores calls of `serial`: one per `status`, `everyMs` apart, the newest starting at `newest`. */
function calls(serial: string, statuses: string[], newest: number, everyMs = M): void {
  const upserts: CallObservation[] = statuses.map((status, i) => {
    seq += 1;
    return callObservation(String(100000 + seq), { serial, status, startedAt: newest - (statuses.length - 1 - i) * everyMs });
  });
  repo.write({ account: 'default', now: NOW, upserts, checked: [], sync: { highWater: null, syncedAt: null, resume: null }, stuckAfterMs: H });
}

/** Evaluates every rule of `c` for the given boxes with facts read now; by `rule/serial`. */
async function judge(c: Config, serials: string[], wasActive = false): Promise<Map<string, ReturnType<typeof evaluateRule>>> {
  const facts = await readCallFacts(repo, c.rules, NOW, { lookBackMs: D, account: 'default' });
  const ctx = fleetContext([], NOW, null, facts);
  const out = new Map<string, ReturnType<typeof evaluateRule>>();
  for (const rule of c.rules as RuleConfig[]) {
    if (isFleetRule(rule)) out.set(`${rule.name}/`, evaluateFleetRule(rule, ctx, wasActive));
    else for (const serial of serials) out.set(`${rule.name}/${serial}`, evaluateRule(rule, box({ serial }), ctx, wasActive));
  }
  return out;
}

const F = 'failed';
const C = 'completed';

describe('call_failure_rate', () => {
  const c = config('  - { name: cf, kind: call_failure_rate, window: 10, min_calls: 5, above: 50, clear_below: 20, severity: warning }\n');

  it('judges the failed share of the last `window` final calls, ignoring calls still initiated', async () => {
    // 12 final calls: the 2 oldest failed (outside the window), then 6 failed of the last 10
    calls('BX-1', [F, F, C, C, C, C, F, F, F, F, F, F], NOW - 5 * M);
    calls('BX-1', ['initiated'], NOW);
    const r = (await judge(c, ['BX-1'])).get('cf/BX-1');
    expect(r?.condition).toBe('active');
    expect(r?.value).toBe('60%');
    expect(r?.summary).toBe('6 of 10 calls failed (60%, above 50%)');
  });

  it('needs min_calls final calls: one failed call of one says nothing', async () => {
    calls('BX-1', [F], NOW);
    calls('BX-2', [F, F, F, F], NOW);
    const r = await judge(c, ['BX-1', 'BX-2', 'BX-3']);
    expect(r.get('cf/BX-1')?.condition).toBe('unknown');
    expect(r.get('cf/BX-2')?.condition).toBe('unknown');
    expect(r.get('cf/BX-3')?.condition).toBe('unknown'); // no calls at all
  });

  it('clears only below clear_below once active (hysteresis)', async () => {
    calls('BX-1', [F, F, F, C, C, C, C, C, C, C], NOW); // 30 %
    expect((await judge(c, ['BX-1'], false)).get('cf/BX-1')?.condition).toBe('inactive');
    expect((await judge(c, ['BX-1'], true)).get('cf/BX-1')?.condition).toBe('active');
    calls('BX-1', [C], NOW + 1); // 2 of the last 10: 20 %, not below 20 %
    expect((await judge(c, ['BX-1'], true)).get('cf/BX-1')?.condition).toBe('active');
    calls('BX-1', [C], NOW + 2); // 1 of 10: 10 %
    expect((await judge(c, ['BX-1'], true)).get('cf/BX-1')?.condition).toBe('inactive');
  });

  it('with a time window counts the final calls that started within it', async () => {
    const t = config('  - { name: cf, kind: call_failure_rate, window: 1h, min_calls: 3, above: 50, severity: warning }\n');
    calls('BX-1', [F, F, F, F, F], NOW - 2 * H); // too old
    calls('BX-1', [C, C, F, C], NOW - M, 10 * M);
    const r = (await judge(t, ['BX-1'])).get('cf/BX-1');
    expect(r?.condition).toBe('inactive');
    expect(r?.summary).toBe('1 of 4 calls failed (25%)');
    expect(t.rules[0]).toMatchObject({ window: { calls: null, ms: H }, clearBelow: 40 });
  });

  it('says unknown without fresh call data (no successful call sync)', async () => {
    calls('BX-1', [F, F, F, F, F, F], NOW);
    const rule = c.rules[0] as RuleConfig;
    expect(evaluateRule(rule, box({ serial: 'BX-1' }), fleetContext([], NOW, null, null), false).condition).toBe('unknown');
  });
});

describe('call_stuck', () => {
  it('is active while a call stays initiated longer than max_duration', async () => {
    const c = config('  - { name: st, kind: call_stuck, max_duration: 10m, severity: warning }\n');
    calls('BX-1', ['initiated'], NOW - 25 * M);
    calls('BX-2', ['initiated'], NOW - 5 * M);
    calls('BX-3', ['initiated'], NOW - 2 * D); // older than the look-back: no longer asked about
    const r = await judge(c, ['BX-1', 'BX-2', 'BX-3']);
    expect(r.get('st/BX-1')).toMatchObject({ condition: 'active', value: 1, summary: '1 call initiated longer than 10m (the oldest for 25m)' });
    expect(r.get('st/BX-2')?.condition).toBe('inactive');
    expect(r.get('st/BX-3')?.condition).toBe('inactive');
  });
});

describe('calls_silent', () => {
  const c = config('  - { name: quiet, kind: calls_silent, for: 6h, active_days: 3, severity: info }\n');

  it('fires for a box that placed calls every day and none for `for`; a box idle on purpose is left alone', async () => {
    for (let d = 4; d >= 1; d--) calls('BX-1', [C, C], NOW - d * D);
    calls('BX-1', [C], NOW - 7 * H); // the last call, 7 hours ago
    for (let d = 4; d >= 1; d--) calls('BX-2', [C], NOW - d * D);
    calls('BX-2', [C], NOW - H); // still calling
    calls('BX-3', [C], NOW - 3 * D); // calls now and then only
    const r = await judge(c, ['BX-1', 'BX-2', 'BX-3', 'BX-4']);
    expect(r.get('quiet/BX-1')).toMatchObject({ condition: 'active', value: '7h' });
    expect(r.get('quiet/BX-2')?.condition).toBe('inactive');
    expect(r.get('quiet/BX-3')?.condition).toBe('inactive');
    expect(r.get('quiet/BX-4')?.condition).toBe('inactive');
    // `for` is the silence; the alert fires as soon as it is reached
    expect(c.rules[0]).toMatchObject({ for: 0, silentFor: 6 * H });
  });
});

describe('fleet_call_failure_rate', () => {
  it('judges the calls of the boxes its glob selects, as one fleet alert', async () => {
    const c = config(`  - { name: fleet, kind: fleet_call_failure_rate, window: 1h, min_calls: 10, above: 30, severity: critical }
  - { name: east, kind: fleet_call_failure_rate, boxes: "EAST-*", window: 1h, min_calls: 10, above: 30, severity: critical }
`);
    for (const s of ['EAST-1', 'EAST-2']) calls(s, [F, F, F, C, C], NOW - M);
    for (const s of ['WEST-1', 'WEST-2', 'WEST-3', 'WEST-4']) calls(s, [C, C, C, C, C], NOW - M);
    const r = await judge(c, []);
    expect(r.get('fleet/')).toMatchObject({ condition: 'inactive', summary: '6 of 30 calls failed (20%)' });
    expect(r.get('east/')).toMatchObject({ condition: 'active', value: '60%' });
  });
});

describe('call rule configuration', () => {
  const problems = (text: string): string[] => {
    try {
      parseConfig(text, {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
    }
    throw new Error('expected the configuration to be invalid');
  };

  it('names the field of a call rule without a calls: section, a bad window and a clear level above the threshold', async () => {
    expect(problems('gateway: { secret_key: k }\nrules:\n  - { name: cf, kind: call_failure_rate, severity: warning }\n')).toEqual([
      'rules[0].kind: call_failure_rate needs a calls: section (boxwatch reads no calls without it)',
    ]);
    expect(problems('gateway: { secret_key: k }\ncalls: {}\nrules:\n  - { name: cf, kind: call_failure_rate, window: soon, severity: warning }\n')[0]).toMatch(
      /^rules\[0\]\.window: invalid duration "soon".*a number of calls/,
    );
    expect(problems('gateway: { secret_key: k }\ncalls: {}\nrules:\n  - { name: cf, kind: call_failure_rate, above: 20, clear_below: 30, severity: warning }\n')).toEqual([
      'rules[0].clear_below: must not be higher than above (20)',
    ]);
  });

  it('defaults: the last 20 calls, at least 5, above 50 % clearing below 40 %', async () => {
    expect(config('  - { name: cf, kind: call_failure_rate, severity: warning }\n').rules[0]).toMatchObject({
      window: { calls: 20, ms: null },
      minCalls: 5,
      above: 50,
      clearBelow: 40,
      maxAge: D,
    });
  });
});

describe('printing the call rules', () => {
  it('formatConfig writes them back as they parse', async () => {
    const { formatConfig } = await import('../../src/config/print.js');
    const c = config(`  - { name: a, kind: call_failure_rate, window: 15, severity: warning }
  - { name: b, kind: call_failure_rate, window: 90m, severity: warning }
  - { name: c, kind: call_stuck, max_duration: 45m, severity: warning }
  - { name: d, kind: calls_silent, for: 8h, severity: info }
  - { name: e, kind: fleet_call_failure_rate, window: 2h, severity: critical }
`);
    const printed = formatConfig(c, { redact: false });
    expect(printed).toContain('window: 1h30m');
    expect(printed).toMatch(/kind: calls_silent\n( {4}.*\n)*? {4}for: 8h\n/);
    expect(parseConfig(printed, {})).toEqual(c);
  });
});
