/**
 * Several accounts in the configuration (`gateways:`): the list, each account's options and
 * schedule, the exclusivity with `gateway:`, the rules' `accounts` filter, and secrets that never
 * print. A single `gateway:` is the account "default".
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { configProblems } from '../helpers/config-problems.js';
import { formatConfig, parseConfig } from '../../src/config/index.js';

const ENV = { BOXWATCH_SECRET_KEY: 'k-default-123', ACME_KEY: 'k-acme-456', GLOBEX_KEY: 'k-globex-789' };


const TWO = `gateways:
  - name: acme
    base_url: http://127.0.0.1:8081
    secret_key: \${ACME_KEY}
  - name: globex
    base_url: https://gw.example.com/
    secret_key: \${GLOBEX_KEY}
    schedule: "*/10 * * * * *"
    timeout: 3s
    concurrency: 2
`;

const problems = (text: string, env: Record<string, string> = ENV): string[] => configProblems(text, env);

describe('gateways:', () => {
  it('lists each account with its own options; the schedule defaults to poll.schedule', () => {
    const config = parseConfig(TWO, ENV);
    expect(config.gateways.map((a) => [a.name, a.baseUrl, a.secretKey, a.schedule, a.timeout, a.concurrency])).toEqual([
      ['acme', 'http://127.0.0.1:8081', 'k-acme-456', '*/30 * * * * *', 10_000, 8],
      ['globex', 'https://gw.example.com/', 'k-globex-789', '*/10 * * * * *', 3_000, 2],
    ]);
  });

  it('a single gateway: is one account named "default", polled on poll.schedule', () => {
    const config = parseConfig('gateway:\n  secret_key: ${BOXWATCH_SECRET_KEY}\npoll: { schedule: "*/5 * * * * *" }\n', ENV);
    expect(config.gateways).toEqual([{ name: 'default', ...config.gateway, schedule: '*/5 * * * * *' }]);
  });

  it('gateway: and gateways: together is an error naming gateways', () => {
    expect(problems(`gateway: { secret_key: x }\n${TWO}`)).toEqual(['gateways: gateway: (one account) and gateways: (several) are mutually exclusive: give one of them']);
  });

  it('names the field of a bad account: name, duplicate, key, schedule, unknown key', () => {
    expect(problems('gateways:\n  - { name: Acme, secret_key: x }\n')).toEqual(['gateways[0].name: must be lowercase letters, digits, "-" and "_" (at most 63), starting with a letter or digit']);
    expect(problems('gateways:\n  - { name: a/b, secret_key: x }\n')[0]).toMatch(/^gateways\[0\]\.name: /);
    expect(problems('gateways:\n  - { name: a, secret_key: x }\n  - { name: a, secret_key: y }\n')).toEqual(['gateways[1].name: duplicate name "a"']);
    expect(problems('gateways:\n  - { name: a }\n')).toEqual(['gateways[0].secret_key: is required (e.g. secret_key: ${BOXWATCH_SECRET_KEY})']);
    expect(problems('gateways:\n  - { name: a, secret_key: x, schedule: "every minute" }\n')[0]).toMatch(/^gateways\[0\]\.schedule: invalid cron expression/);
    expect(problems('gateways:\n  - { name: a, secret_key: x, secret: y }\n')[0]).toMatch(/^gateways\[0\]\.secret: unknown key/);
    expect(problems('gateways: []\n')).toEqual(['gateways: must not be empty']);
  });

  it('an account key whose variable is unset is named, without any value', () => {
    const lines = problems(TWO, { ACME_KEY: 'k-acme-456' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^gateways\[1\]\.secret_key: .*GLOBEX_KEY/);
  });

  it('rules take an accounts filter naming configured accounts', () => {
    const config = parseConfig(`${TWO}rules:\n  - { name: off, kind: disconnected, severity: critical, accounts: [globex] }\n`, ENV);
    expect(config.rules[0]?.accounts).toEqual(['globex']);
    expect(problems(`${TWO}rules:\n  - { name: off, kind: disconnected, severity: critical, accounts: [initech] }\n`)).toEqual([
      'rules[0].accounts[0]: no account named "initech" (accounts: acme, globex)',
    ]);
    expect(problems('gateway: { secret_key: x }\nrules:\n  - { name: off, kind: disconnected, severity: critical, accounts: [acme] }\n')).toEqual([
      'rules[0].accounts[0]: no account named "acme" (accounts: default)',
    ]);
  });

  it('calls, test calls and the archive are accepted with several accounts and with a single named one', () => {
    const testCalls = 'test_calls:\n  - { name: path-check, boxes: "*", to: "+14155550123", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 2, total: 3 }, timeout: 10m, severity: warning }\n';
    const config = parseConfig(`${TWO}calls: {}\narchive: { dir: /tmp/rec }\n${testCalls}`, ENV);
    expect(config.calls).toBeDefined();
    expect(config.testCalls?.map((t) => t.name)).toEqual(['path-check']);
    const one = 'gateways:\n  - { name: acme, base_url: http://127.0.0.1:8081, secret_key: "${ACME_KEY}" }\n';
    expect(parseConfig(`${one}calls: {}\n${testCalls}`, ENV).gateways.map((a) => a.name)).toEqual(['acme']);
  });

  it('printing redacts every account key and parses back to the same configuration', () => {
    const config = parseConfig(TWO, ENV);
    const printed = formatConfig(config);
    for (const secret of Object.values(ENV)) expect(printed).not.toContain(secret);
    expect(printed).toContain('gateways:');
    expect(printed).not.toMatch(/^gateway:/m);
    expect(parseConfig(formatConfig(config, { redact: false }), {})).toEqual(config);
  });

  it('a single gateway: prints as gateway:, as before', () => {
    const config = parseConfig('gateway:\n  secret_key: ${BOXWATCH_SECRET_KEY}\n', ENV);
    const printed = formatConfig(config);
    expect(printed).toMatch(/^gateway:/m);
    expect(printed).not.toContain('gateways');
    expect(parseConfig(formatConfig(config, { redact: false }), {})).toEqual(config);
  });
});

describe('boxwatch check-config with gateways: (the built CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-accounts-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('prints the accounts with every key redacted', async () => {
    await ensureBuilt();
    const r = await runBuilt(['check-config', '--config', file('two.yaml', TWO)], { cwd: dir, env: ENV });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('name: globex');
    for (const secret of Object.values(ENV)) expect(r.out).not.toContain(secret);
  });

  it('gateway: and gateways: together: one line naming gateways, exit 2', async () => {
    await ensureBuilt();
    const r = await runBuilt(['check-config', '--config', file('both.yaml', `gateway: { secret_key: x }\n${TWO}`)], { cwd: dir, env: ENV });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/gateways: gateway: \(one account\) and gateways: \(several\) are mutually exclusive/);
    for (const secret of Object.values(ENV)) expect(r.err).not.toContain(secret);
  });
});
