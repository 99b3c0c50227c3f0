/**
 * `boxwatch rules test FILE`: the shipped example passes against the example configuration's
 * rules; a wrong expectation fails with a diff and exit 1; every kind of invalid test file exits 2
 * naming the path of the bad field. Plus the value-string expansion on its own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandTimeline } from '../../src/cli/rules-test-runner.js';
import { run } from './run.js';

const dir = mkdtempSync(join(tmpdir(), 'boxwatch-rules-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(text: string): string {
  const path = join(dir, `t${n++}.yaml`);
  writeFileSync(path, text);
  return path;
}

const RULES = `rules:
  - { name: battery-low, kind: low_battery, below: 20, clear_above: 25, severity: warning }
  - { name: box-offline, kind: disconnected, for: 1m, severity: critical }
`;

describe('boxwatch rules test', () => {
  it('the shipped example passes against config/boxwatch.example.yaml', async () => {
    const r = await run(['rules', 'test', 'config/rules.test.yaml']);
    expect(r).toMatchObject({ code: 0, err: '' });
    const lines = r.out.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('PASS  '))).toHaveLength(17);
    expect(lines).toContain('PASS  a battery runs low and recovers with hysteresis @ 3m');
    expect(lines.at(-1)).toBe('17 passed, 0 failed (rules from config/boxwatch.example.yaml)');
  });

  it('prints a diff under each failing case and exits 1', async () => {
    const path = file(`${RULES}
tests:
  - name: drain
    interval: 1m
    boxes:
      - serial: SN-1
        values: { battery: "30-5x4" }     # 30 25 20 15 10
    alert_tests:
      - at: 3m
        expected: [{ rule: battery-low, box: SN-1, state: firing, value: 15 }]
      - at: 4m
        expected: [{ rule: battery-low, box: SN-1, state: pending }]
`);
    const r = await run(['rules', 'test', path]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('PASS  drain @ 3m\n');
    expect(r.out).toContain(
      'FAIL  drain @ 4m\n' +
        '      missing:    battery-low SN-1 pending\n' +
        '      unexpected: battery-low SN-1 firing (severity warning, value 10, held back none)\n',
    );
    expect(r.out).toContain(`1 passed, 1 failed (rules from ${path})`);
    expect(r.err).toBe('error [rules_test_failed]: 1 of 2 test case(s) failed\n');
  });

  it('covers for, unknown data, inhibition, silences and filters with inline rules', async () => {
    const path = file(`${RULES}
evaluation_interval: 1m
tests:
  - interval: 1m
    boxes:
      - serial: SN-1
        battery: 10
        values: { connected: "1 0 0 0 1", battery: "_ null null null 50" }
      - { serial: SN-2, connected: false }
    silences: [{ boxes: SN-2, to: 10m }]
    alert_tests:
      - at: 1m
        expected:
          - { rule: battery-low, box: SN-1, state: firing, held_back: none }
          - { rule: box-offline, box: SN-1, state: pending }
          - { rule: box-offline, box: SN-2, state: firing, held_back: silenced }
      - at: 2m30s
        box: SN-1
        expected:
          - { rule: battery-low, box: SN-1, state: firing, held_back: inhibited, value: 10 }
          - { rule: box-offline, box: SN-1, state: firing }
      - at: 4m
        rule: battery-low
        expected: []
`);
    const r = await run(['rules', 'test', path]);
    expect(r.out).not.toContain('FAIL');
    expect(r.code).toBe(0);
    expect(r.out).toContain('PASS  tests[0] @ 2m30s');
  });

  it('judges the call rules from the calls a test case lists (failure rate with hysteresis, stuck calls, inhibition)', async () => {
    const text = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: call-failures, kind: call_failure_rate, window: 5, min_calls: 3, above: 50, clear_below: 30, severity: warning }
  - { name: call-stuck, kind: call_stuck, max_duration: 10m, severity: warning }
evaluation_interval: 1m
tests:
  - name: calls
    boxes: [{ serial: SN-1 }, { serial: SN-2 }, { serial: SN-3, connected: false }]
    calls:
      - { box: SN-1, at: 0m, status: completed, count: 2 }
      - { box: SN-1, at: 2m, status: failed, count: 3 }
      - { box: SN-1, at: 6m, status: completed, count: 3 }
      - { box: SN-1, at: 8m, status: completed, count: 3 }
      - { box: SN-2, at: 1m, status: initiated }
      - { box: SN-3, at: -1h, status: failed, count: 5 }
    alert_tests:
      - { at: 1m, box: SN-1, expected: [] }
      - at: 3m
        rule: call-failures
        expected:
          - { rule: call-failures, box: SN-1, state: firing, value: 60% }
          - { rule: call-failures, box: SN-3, state: firing, held_back: inhibited }
      - at: 7m
        box: SN-1
        expected: [{ rule: call-failures, box: SN-1, state: firing, value: 40% }]
      - { at: 9m, box: SN-1, expected: [] }
      - { at: 9m, rule: call-stuck, expected: [] }
      - at: 12m
        rule: call-stuck
        expected: [{ rule: call-stuck, box: SN-2, state: firing, value: 1 }]
`;
    const r = await run(['rules', 'test', file(text)]);
    expect(r.out).not.toContain('FAIL');
    expect(r.code).toBe(0);
    expect(r.out).toContain('6 passed, 0 failed');
    // a wrong expectation about a call rule fails with the diff
    const wrong = await run(['rules', 'test', file(text.replace('value: 40%', 'value: 20%'))]);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toMatch(/FAIL {2}calls @ 7m\n\s+missing: {4}call-failures SN-1 firing/);
  });

  it('forgets a box missing past forget_after as the daemon does: its alerts end, and it is judged again once listed', async () => {
    const path = file(`rules:
  - { name: box-missing, kind: missing, forget_after: 10m, severity: warning }
  - { name: box-offline, kind: disconnected, severity: critical }
evaluation_interval: 1m
tests:
  - name: decommissioned
    boxes: [{ serial: SN-1 }, { serial: SN-2 }]
    series:
      - { box: SN-1, at: 2m, missing: true, connected: false }
      - { box: SN-1, at: 30m, missing: false }
    alert_tests:
      - { at: 5m, box: SN-1, expected: [{ rule: box-missing, box: SN-1, state: firing }] }
      - { at: 20m, box: SN-1, expected: [] }
      - { at: 31m, box: SN-1, expected: [{ rule: box-offline, box: SN-1, state: firing }] }
`);
    const r = await run(['rules', 'test', path]);
    expect(r.out).not.toContain('FAIL');
    expect(r.out).toContain('3 passed, 0 failed');
    expect(r.code).toBe(0);
  });

  it('takes the rules from --config when the file names none (without needing its secrets)', async () => {
    const config = file(`gateway: { secret_key: "\${UNSET_SECRET}" }\nnotifiers: [{ name: s, type: slack, webhook_url: "\${UNSET_URL}" }]\n${RULES}`);
    const path = file(`tests:
  - series: [{ box: SN-1, at: 0m, connected: false }]
    alert_tests: [{ at: 1m, expected: [{ rule: box-offline, box: SN-1, state: firing }] }]
`);
    const r = await run(['rules', 'test', path, '--config', config]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`(rules from ${config})`);
    const env = await run(['rules', 'test', path], { BOXWATCH_CONFIG: config });
    expect(env.code).toBe(0);
  });

  it('judges a rule with accounts: per account, with the accounts of the gateways: of the document holding the rules (no keys needed)', async () => {
    const tests = `tests:
  - name: same serial, two accounts
    series:
      - { box: acme/BX-1, at: 0m, connected: false }
      - { box: globex/BX-1, at: 0m, connected: false }
    alert_tests:
      - at: 1m
        expected:
          - { rule: acme-offline, box: acme/BX-1, state: firing }
          - { rule: any-offline, box: acme/BX-1, state: firing }
          - { rule: any-offline, box: globex/BX-1, state: firing }
`;
    const rules = `rules:
  - { name: acme-offline, kind: disconnected, severity: critical, accounts: [acme] }
  - { name: any-offline, kind: disconnected, severity: warning }
`;
    const gateways = 'gateways:\n  - { name: acme, secret_key: "${UNSET_ACME_KEY}" }\n  - { name: globex, base_url: "https://gw.example.com", secret_key: "${UNSET_GLOBEX_KEY}" }\n';
    // inline rules, the accounts beside them
    const inline = await run(['rules', 'test', file(`${gateways}${rules}${tests}`)]);
    expect(inline).toMatchObject({ code: 0, err: '' });
    expect(inline.out).toContain('PASS  same serial, two accounts @ 1m');
    // the rules and accounts of --config
    const config = file(`${gateways}${rules}`);
    const fromConfig = await run(['rules', 'test', file(tests), '--config', config]);
    expect(fromConfig).toMatchObject({ code: 0, err: '' });
    // an expectation of acme-offline on globex's box fails: the rule is not globex's
    const wrong = await run(['rules', 'test', file(`${gateways}${rules}${tests.replace('- { rule: acme-offline, box: acme/BX-1', '- { rule: acme-offline, box: globex/BX-1')}`)]);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toContain('missing:    acme-offline globex/BX-1 firing');
    // a box of an account the document does not configure is named (exit 2)
    const unknown = await run(['rules', 'test', file(`${gateways}${rules}${tests.replace('globex/BX-1, at', 'initech/BX-1, at')}`)]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('tests[0].series[1].box: box initech/BX-1 is of account "initech", which is not configured (accounts: acme, globex)');
  });

  describe('an invalid test file exits 2 and names the bad field', () => {
    const test = `tests:\n  - series: [{ box: SN-1, at: 0m }]\n    alert_tests: [{ at: 1m, expected: [] }]\n`;
    const cases: [string, string, string][] = [
      ['no tests', RULES, 'tests: is required'],
      ['bad at', `${RULES}tests:\n  - alert_tests: [{ at: soon }]\n`, 'tests[0].alert_tests[0].at: invalid duration "soon"'],
      ['typo', `${RULES}tests:\n  - boxes: [{ serial: SN-1, batery: 5 }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].boxes[0].batery: unknown key (did you mean "battery"?)'],
      ['bad token', `${RULES}tests:\n  - boxes: [{ serial: SN-1, values: { battery: "50 abc" } }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].boxes[0].values.battery: value 2: "abc" is not a number'],
      ['bad boolean', `${RULES}tests:\n  - boxes: [{ serial: SN-1, values: { connected: "1 maybe" } }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].boxes[0].values.connected: value 2: "maybe" is not a boolean'],
      ['unknown rule', `${RULES}tests:\n  - alert_tests: [{ at: 0m, expected: [{ rule: batery-low, box: SN-1, state: firing }] }]\n`, 'tests[0].alert_tests[0].expected[0].rule: no rule named "batery-low"'],
      ['bad state', `${RULES}tests:\n  - alert_tests: [{ at: 0m, expected: [{ rule: battery-low, state: resolved }] }]\n`, 'tests[0].alert_tests[0].expected[0].state: must be one of pending, firing'],
      ['bad inline rule', `rules:\n  - { name: b, kind: low_battery, below: 200, severity: warning }\n${test}`, 'rules[0].below (rule "b"): must be at most 100'],
      ['both sources', `rule_files: [x.yaml]\n${RULES}${test}`, 'rules: use either rules or rule_files, not both'],
      ['missing rule file', `rule_files: [does-not-exist.yaml]\n${test}`, 'rule_files: cannot read'],
      ['silence without matchers', `${RULES}tests:\n  - silences: [{ to: 5m }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].silences[0]: needs boxes or rules'],
      ['window backwards', `${RULES}tests:\n  - gateway_down: [{ from: 5m, to: 1m }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].gateway_down[0].to: must be after from'],
      ['yaml syntax', 'tests: [\n', 'line 2, column 1'],
      // Each of these once ran for hours (an Infinity or a huge `at`, a 1 ms interval).
      ['at with hundreds of digits', `${RULES}tests:\n  - alert_tests: [{ at: ${'9'.repeat(300)}d }]\n`, 'tests[0].alert_tests[0].at: invalid duration'],
      ['at beyond the evaluation limit', `${RULES}evaluation_interval: 1ms\ntests:\n  - alert_tests: [{ at: 3650d }]\n`, 'tests[0].alert_tests[0].at: needs 315360000000 evaluations (at / evaluation_interval); the limit is 100000'],
      ['a timeline too long', `${RULES}tests:\n  - boxes: [{ serial: SN-1, values: { battery: "_x99999999999" } }]\n    alert_tests: [{ at: 0m }]\n`, 'tests[0].boxes[0].values.battery: the timeline is longer than 100000 values'],
    ];
    it.each(cases)('%s', async (_name, text, message) => {
      const r = await run(['rules', 'test', file(text)]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(message);
      expect(r.out).toBe('');
    });

    it('a missing test file', async () => {
      const r = await run(['rules', 'test', join(dir, 'nope.yaml')]);
      expect(r.code).toBe(2);
      expect(r.err).toContain('cannot read');
    });

    it('no rules anywhere', async () => {
      const r = await run(['rules', 'test', file(test), '--config', join(dir, 'no-config.yaml')]);
      expect(r.code).toBe(2);
      expect(r.err).toContain('cannot read');
    });
  });
});

describe('value strings', () => {
  it('expand like promtool: a+bxn, a-bxn, axn, _xn', () => {
    expect(expandTimeline('100-10x3 _ 5x2 _x2 1+0.5x2').tokens).toEqual(['100', '90', '80', '70', null, '5', '5', '5', null, null, '1', '1.5', '2']);
    expect(expandTimeline('now 2m null').tokens).toEqual(['now', '2m', 'null']);
  });
});
