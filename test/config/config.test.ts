import { describe, expect, it } from 'vitest';
import { configProblems } from '../helpers/config-problems.js';
import { parseConfig, type Config } from '../../src/config/index.js';
import { routes } from '../../src/alerts/group.js';

const ENV = { BOXWATCH_SECRET_KEY: 'k-123' };
const MINIMAL = 'gateway:\n  secret_key: ${BOXWATCH_SECRET_KEY}\n';

const problems = (text: string, env: Record<string, string> = ENV): string[] => configProblems(text, env);

describe('defaults', () => {
  it('fills in every default from a file with only the key', () => {
    const config: Config = parseConfig(MINIMAL, ENV);
    expect(config.gateway).toEqual({
      baseUrl: 'http://127.0.0.1:8080',
      secretKey: 'k-123',
      timeout: 10_000,
      concurrency: 8,
      maxBody: { deviceList: 32 * 1024 ** 2, deviceDetails: 256 * 1024, callList: 8 * 1024 ** 2, callDetails: 8 * 1024 ** 2, makeCall: 64 * 1024 },
    });
    expect(config.poll).toEqual({ schedule: '*/30 * * * * *', detailsEvery: 300_000, timezone: 'UTC' });
    expect(config.storage).toEqual({ path: './data/boxwatch.db', rawRetention: 14 * 86_400_000, rollupRetention: 400 * 86_400_000 });
    expect(config.alerting).toEqual({
      repeatInterval: 4 * 3_600_000,
      groupWait: 30_000,
      inhibit: true,
      gateway: { unreachableAfter: 3, schemaAfter: 1, severity: 'critical' },
      delivery: { initialBackoff: 5_000, maxBackoff: 300_000, maxAge: 86_400_000 },
    });
    expect(config.notifiers).toEqual([{ name: 'console', type: 'console', minSeverity: 'info', boxes: ['*'] }]);
    expect(config.http).toEqual({ enabled: true, listen: '127.0.0.1:9464', basePath: '/', maxConnections: 1_000 });
    expect(config.log).toEqual({ level: 'info', format: 'auto' });
  });

  it('uses the documented default rules when `rules:` is absent, and none for `rules: []`', () => {
    const config = parseConfig(MINIMAL, ENV);
    expect(config.rules.map((r) => [r.name, r.kind, r.severity])).toEqual([
      ['box-offline', 'disconnected', 'critical'],
      ['battery-low', 'low_battery', 'warning'],
      ['signal-weak', 'weak_signal', 'warning'],
      ['box-stale', 'stale', 'warning'],
      ['firmware', 'firmware_drift', 'info'],
      ['box-missing', 'missing', 'warning'],
    ]);
    expect(config.rules[0]).toMatchObject({ for: 120_000, keepFiringFor: 0, boxes: ['*'] });
    expect(parseConfig(`${MINIMAL}rules: []\n`, ENV).rules).toEqual([]);
  });

  it('derives clear levels (threshold + 5) and the firmware expectation', () => {
    const config = parseConfig(
      `${MINIMAL}rules:
  - { name: b, kind: low_battery, below: 30, severity: warning }
  - { name: s, kind: weak_signal, below_dbm: -100, severity: warning }
  - { name: f1, kind: firmware_drift, severity: info }
  - { name: f2, kind: firmware_drift, min_version: 2.9.0, severity: info }
  - { name: f3, kind: firmware_drift, expected: 2.10.0, min_version: 2.9.0, severity: info }
  - { name: st, kind: stale, severity: warning, boxes: "SN-00*" }
`,
      ENV,
    );
    expect(config.rules[0]).toMatchObject({ below: 30, clearAbove: 35 });
    expect(config.rules[1]).toMatchObject({ belowDbm: -100, clearAboveDbm: -95 });
    expect(config.rules[2]).toMatchObject({ expected: 'majority' });
    expect(config.rules[3]).toMatchObject({ expected: 'none', minVersion: '2.9.0' });
    expect(config.rules[4]).toMatchObject({ expected: '2.10.0', minVersion: '2.9.0' });
    expect(config.rules[5]).toMatchObject({ maxAge: 900_000, boxes: ['SN-00*'] });
  });

  it('accepts `http: false` and a single address for `to`', () => {
    const config = parseConfig(
      `${MINIMAL}http: false\nnotifiers:\n  - { name: m, type: email, smtp_url: "smtp://mail:25", from: a@example.com, to: ops@example.com }\n`,
      ENV,
    );
    expect(config.http.enabled).toBe(false);
    expect(config.notifiers[0]).toMatchObject({ type: 'email', to: ['ops@example.com'] });
  });

  it('treats an empty file as all defaults, reporting the missing key', () => {
    expect(problems('')).toEqual(['gateway.secret_key: is required (e.g. secret_key: ${BOXWATCH_SECRET_KEY})']);
  });
});

describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    ['1h30m', 5_400_000],
  ])('poll.details_every: %s', (text, ms) => {
    expect(parseConfig(`${MINIMAL}poll: { details_every: ${text} }\n`, ENV).poll.detailsEvery).toBe(ms);
  });

  it('accepts 0 for `for` but not for intervals that must be positive', () => {
    const config = parseConfig(`${MINIMAL}rules: [{ name: x, kind: disconnected, severity: info, for: 0 }]\n`, ENV);
    expect(config.rules[0]?.for).toBe(0);
    expect(problems(`${MINIMAL}poll: { details_every: 0s }\n`)).toEqual(['poll.details_every: must be longer than 0s']);
  });

  it.each([
    ['5x', 'poll.details_every: invalid duration "5x" (use e.g. 30s, 5m, 2h, 7d)'],
    ['"5 minutes"', 'poll.details_every: invalid duration "5 minutes" (use e.g. 30s, 5m, 2h, 7d)'],
    ['30', 'poll.details_every: invalid duration 30 (write a unit, e.g. 30s, 5m, 2h, 7d)'],
    ['-5m', 'poll.details_every: invalid duration "-5m" (use e.g. 30s, 5m, 2h, 7d)'],
  ])('rejects %s with its path', (text, message) => {
    expect(problems(`${MINIMAL}poll: { details_every: ${text} }\n`)).toEqual([message]);
  });

  // A duration beyond a timer's range once passed and then aborted every request after 1 ms
  // (gateway.timeout: 25d) or spun a timer every millisecond (group_wait: 30d).
  it.each([
    ['gateway: { secret_key: k, timeout: 25d }', 'gateway.timeout: duration "25d" is longer than the limit of 5m'],
    ['alerting: { group_wait: 30d }', 'alerting.group_wait: duration "30d" is longer than the limit of 1d'],
    ['alerting: { delivery: { initial_backoff: 2d } }', 'alerting.delivery.initial_backoff: duration "2d" is longer than the limit of 1h'],
    ['alerting: { repeat_interval: 60d }', 'alerting.repeat_interval: duration "60d" is longer than the limit of 30d'],
    ['storage: { raw_retention: 4000d }', 'storage.raw_retention: duration "4000d" is longer than the limit of 3650d'],
  ])('refuses a duration above its documented upper bound: %s', (yaml, message) => {
    expect(problems(`${MINIMAL}${yaml}\n`.replace(`${MINIMAL}gateway:`, 'gateway:'))).toContain(message);
  });

  it('reads gateway.max_body sizes and refuses one outside 1KiB..1GiB', () => {
    expect(parseConfig(`gateway: { secret_key: k, max_body: { device_list: 64MiB, device_details: 4096 } }\n`, ENV).gateway.maxBody).toMatchObject({ deviceList: 64 * 1024 ** 2, deviceDetails: 4096 });
    expect(problems(`gateway: { secret_key: k, max_body: { device_list: 2GiB } }\n`)).toEqual([
      'gateway.max_body.device_list: invalid size "2GiB" (a size from 1KiB to 1GiB, e.g. 256KiB, 32MiB)',
    ]);
  });

  it('refuses a duration written with hundreds of digits (never Infinity)', () => {
    expect(problems(`${MINIMAL}poll: { details_every: ${'9'.repeat(400)}s }\n`)).toEqual([
      expect.stringMatching(/^poll\.details_every: invalid duration "9{37}\.\.\."/),
    ]);
  });
});

describe('errors name their path', () => {
  it.each([
    ['unknown top-level key', 'logg: { level: info }', 'logg: unknown key (did you mean "log"?)'],
    ['typo in a section', 'poll: { shedule: "* * * * *" }', 'poll.shedule: unknown key (did you mean "schedule"?)'],
    ['typo in a rule', 'rules: [{ name: b, kind: low_battery, belw: 10, severity: info }]', 'rules[0].belw: unknown key (did you mean "below"?)'],
    ['key of another kind', 'rules: [{ name: b, kind: disconnected, below: 10, severity: info }]', 'rules[0].below: unknown key (allowed: name, kind, severity, for, keep_firing_for, boxes, accounts)'],
    ['unknown rule kind', 'rules: [{ name: b, kind: on_fire, severity: info }]', 'rules[0].kind: unknown kind "on_fire" (expected one of disconnected, low_battery, weak_signal, stale, firmware_drift, missing, call_failure_rate, call_stuck, calls_silent, fleet_call_failure_rate, recording_lost, archive_failing)'],
    ['missing kind', 'rules: [{ name: b, severity: info }]', 'rules[0].kind: is required (one of disconnected, low_battery, weak_signal, stale, firmware_drift, missing, call_failure_rate, call_stuck, calls_silent, fleet_call_failure_rate, recording_lost, archive_failing)'],
    ['bad severity', 'rules: [{ name: b, kind: missing, severity: urgent }]', 'rules[0].severity: must be one of critical, warning, info (got "urgent")'],
    ['missing severity', 'rules: [{ name: b, kind: missing }]', 'rules[0].severity: is required (one of critical, warning, info)'],
    ['bad rule name', 'rules: [{ name: "my rule", kind: missing, severity: info }]', 'rules[0].name: must start with a letter or digit and contain only letters, digits, "_", "." and "-"'],
    ['built-in rule name', 'rules: [{ name: gateway_unreachable, kind: missing, severity: info }]', 'rules[0].name: "gateway_unreachable" is a built-in rule name (configure it under alerting.gateway)'],
    ['battery out of range', 'rules: [{ name: b, kind: low_battery, below: 120, severity: info }]', 'rules[0].below: must be at most 100'],
    ['clear on the wrong side', 'rules: [{ name: b, kind: low_battery, below: 20, clear_above: 15, severity: info }]', 'rules[0].clear_above: must not be lower than below (20)'],
    ['clear never reached', 'rules: [{ name: b, kind: low_battery, below: 97, severity: info }]', 'rules[0].below: clear_above (102) must be below 100, or the alert never clears'],
    ['signal clear on the wrong side', 'rules: [{ name: s, kind: weak_signal, below_dbm: -100, clear_above_dbm: -110, severity: info }]', 'rules[0].clear_above_dbm: must not be lower than below_dbm (-100)'],
    ['positive dBm', 'rules: [{ name: s, kind: weak_signal, below_dbm: 5, severity: info }]', 'rules[0].below_dbm: must be at most 0'],
    ['glob class left open', 'rules: [{ name: b, kind: missing, severity: info, boxes: "BX-0000[37" }]', 'rules[0].boxes[0]: glob "BX-0000[37": "[" at position 8 is not closed by "]" (a character class is [abc], [a-z] or [!x])'],
    ['glob range backwards', 'notifiers: [{ name: c, type: console, boxes: ["BX-[9-0]"] }]', 'notifiers[0].boxes[0]: glob "BX-[9-0]": the range "9-0" is backwards'],
    ['bad min_version', 'rules: [{ name: f, kind: firmware_drift, min_version: latest, severity: info }]', 'rules[0].min_version: must be a version such as 2.10.0'],
    ['wrong type', 'gateway: { secret_key: k, concurrency: many }', 'gateway.concurrency: expected a number, got string'],
    ['fractional integer', 'gateway: { secret_key: k, concurrency: 2.5 }', 'gateway.concurrency: expected an integer, got number'],
    ['concurrency too low', 'gateway: { secret_key: k, concurrency: 0 }', 'gateway.concurrency: must be at least 1'],
    ['bad base_url', 'gateway: { secret_key: k, base_url: "ftp://x" }', 'gateway.base_url: must be an http:// or https:// URL'],
    ['bad cron', 'poll: { schedule: "61 * * * *" }', 'poll.schedule: invalid cron expression (5 or 6 fields; e.g. "*/30 * * * * *")'],
    ['retention order', 'storage: { raw_retention: 30d, rollup_retention: 7d }', 'storage.rollup_retention: must not be shorter than raw_retention'],
    ['unknown notifier type', 'notifiers: [{ name: p, type: pager }]', 'notifiers[0].type: unknown type "pager" (expected one of email, slack, console, webhook, alertmanager, pagerduty, teams, ntfy, telegram)'],
    ['email without recipients', 'notifiers: [{ name: m, type: email, smtp_url: "smtp://h", from: a@example.com, to: [] }]', 'notifiers[0].to: must not be empty'],
    ['email with a bad recipient', 'notifiers: [{ name: m, type: email, smtp_url: "smtp://h", from: a@example.com, to: [nobody] }]', 'notifiers[0].to[0]: must be an email address'],
    ['email without smtp_url', 'notifiers: [{ name: m, type: email, from: a@example.com, to: [a@example.com] }]', 'notifiers[0].smtp_url: is required'],
    ['slack without webhook', 'notifiers: [{ name: s, type: slack }]', 'notifiers[0].webhook_url: is required'],
    ['notifier min_severity', 'notifiers: [{ name: c, type: console, min_severity: loud }]', 'notifiers[0].min_severity: must be one of critical, warning, info (got "loud")'],
    ['notifier rule reference', 'notifiers: [{ name: c, type: console, rules: [box-offline, nope] }]', 'notifiers[0].rules[1]: no rule named "nope"'],
    ['notifier rule glob that matches nothing', 'notifiers: [{ name: c, type: console, rules: [box-offline, "power-*"] }]', 'notifiers[0].rules[1]: no rule matches "power-*"'],
    ['bad listen', 'http: { listen: "localhost" }', 'http.listen: must be host:port, e.g. 127.0.0.1:9464'],
    ['bad http', 'http: yes-please', 'http: must be { listen: host:port } or false'],
    ['bad base_path', 'http: { base_path: "boxwatch/" }', 'http.base_path: must be a path such as /boxwatch/ (letters, digits, . _ ~ -)'],
    ['short admin_token', 'http: { admin_token: "abc" }', 'http.admin_token: must be at least 16 characters'],
    ['bad log level', 'log: { level: loud }', 'log.level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    ['list instead of mapping', 'alerting: [1]', 'alerting: expected a mapping, got a list'],
  ])('%s', (_title, yaml, expected) => {
    const text = yaml.startsWith('gateway:') ? `${yaml}\n` : `${MINIMAL}${yaml}\n`;
    expect(problems(text)).toEqual([expected]);
  });

  it('accepts rule-name globs in a notifier\'s rules, as documented, and routes by them', () => {
    const config = parseConfig(`${MINIMAL}notifiers: [{ name: c, type: console, rules: ["box-*", gateway_?nreachable] }]\n`, ENV);
    const notifier = config.notifiers[0]!;
    expect(notifier.rules).toEqual(['box-*', 'gateway_?nreachable']);
    const intent = (rule: string) => ({ rule, serial: 'SN-1', severity: 'critical' as const });
    expect(['box-offline', 'box-stale', 'battery-low', 'gateway_unreachable'].map((r) => routes(notifier, intent(r)))).toEqual([true, true, false, true]);
  });

  it('reports duplicate names with both places', () => {
    expect(
      problems(`${MINIMAL}rules:
  - { name: a, kind: missing, severity: info }
  - { name: a, kind: disconnected, severity: info }
notifiers:
  - { name: c, type: console }
  - { name: c, type: console }
`),
    ).toEqual(['rules[1].name: duplicate name "a" (also rules[0])', 'notifiers[1].name: duplicate name "c" (also notifiers[0])']);
  });

  it('collects every problem of a file at once', () => {
    const found = problems(`gateway: { secret_kye: x, timeout: 5x }
poll: { details_every: 5x }
rules:
  - { name: a, kind: nope, severity: info }
  - { name: a, kind: low_battery, below: 20, clear_above: 10, severity: info }
log: { format: xml }
`);
    expect(found).toEqual([
      'gateway.secret_key: is required (e.g. secret_key: ${BOXWATCH_SECRET_KEY})',
      'gateway.timeout: invalid duration "5x" (use e.g. 30s, 5m, 2h, 7d)',
      'gateway.secret_kye: unknown key (did you mean "secret_key"?)',
      'poll.details_every: invalid duration "5x" (use e.g. 30s, 5m, 2h, 7d)',
      'rules[0].kind: unknown kind "nope" (expected one of disconnected, low_battery, weak_signal, stale, firmware_drift, missing, call_failure_rate, call_stuck, calls_silent, fleet_call_failure_rate, recording_lost, archive_failing)',
      'rules[1].clear_above: must not be lower than below (20)',
      'log.format: must be one of auto, json, pretty (got "xml")',
      'rules[1].name: duplicate name "a" (also rules[0])',
    ]);
  });

  it('reports YAML syntax errors by line and column', () => {
    const found = problems(`${MINIMAL}poll:\n  schedule: "*/30 * * * * *\n`);
    expect(found[0]).toMatch(/^line \d+, column \d+: Missing closing "quote/);
  });

  it('reports duplicate YAML keys', () => {
    expect(problems(`${MINIMAL}log: { level: info }\nlog: { level: warn }\n`)[0]).toMatch(/^line 4, column 1: Map keys must be unique/);
  });

  it('refuses a document that is not a mapping', () => {
    expect(problems('- a\n- b\n')).toEqual(['(root): must be a mapping of keys (gateway:, poll:, ...)']);
  });

  it('error messages name the source file', () => {
    expect(() => parseConfig('log: 1\n', ENV, '/etc/boxwatch.yaml')).toThrow(/^\/etc\/boxwatch\.yaml is invalid:\n {2}gateway\.secret_key/);
  });
});

describe('environment interpolation', () => {
  it('replaces ${VAR} anywhere in a string value', () => {
    const config = parseConfig(
      'gateway:\n  secret_key: ${KEY}\n  base_url: "http://${HOST}:8080"\nstorage: { path: "${DIR}/boxwatch.db" }\n',
      { KEY: 'abc', HOST: 'gw.local', DIR: '/var/lib/boxwatch' },
    );
    expect(config.gateway.secretKey).toBe('abc');
    expect(config.gateway.baseUrl).toBe('http://gw.local:8080');
    expect(config.storage.path).toBe('/var/lib/boxwatch/boxwatch.db');
  });

  it('supports ${VAR:-fallback} and $${ as a literal', () => {
    const config = parseConfig('gateway:\n  secret_key: "$${NOT_A_VAR}"\nstorage: { path: "${DB:-/tmp/x.db}" }\n', {});
    expect(config.gateway.secretKey).toBe('${NOT_A_VAR}');
    expect(config.storage.path).toBe('/tmp/x.db');
    expect(parseConfig(`${MINIMAL}storage: { path: "\${DB:-/tmp/x.db}" }\n`, { ...ENV, DB: '/data/y.db' }).storage.path).toBe('/data/y.db');
  });

  it('names a missing variable and where it is used', () => {
    const found = problems(
      'gateway:\n  secret_key: ${BOXWATCH_SECRET_KEY}\nnotifiers:\n  - { name: s, type: slack, webhook_url: "${SLACK_WEBHOOK_URL}" }\n',
      {},
    );
    expect(found).toContain('gateway.secret_key: environment variable BOXWATCH_SECRET_KEY is not set');
    expect(found).toContain('notifiers[0].webhook_url: environment variable SLACK_WEBHOOK_URL is not set');
  });

  it('rejects malformed references', () => {
    expect(problems(`${MINIMAL}storage: { path: "\${1BAD}" }\n`)).toEqual(['storage.path: invalid environment variable reference "${1BAD}"']);
    expect(problems(`${MINIMAL}storage: { path: "x\${OPEN" }\n`)).toEqual(['storage.path: unterminated "${" (write "$${" for a literal "${")']);
  });

  it('does not interpolate keys or comments', () => {
    const config = parseConfig(`${MINIMAL}# \${NOT_SET} in a comment\n`, ENV);
    expect(config.gateway.secretKey).toBe('k-123');
  });
});
