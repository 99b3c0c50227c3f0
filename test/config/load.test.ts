import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import {
  DEMO_CONFIG_YAML,
  defaultConfig,
  demoConfig,
  formatConfig,
  loadConfig,
  parseConfig,
  redactConfig,
  redactUrl,
} from '../../src/config/index.js';
import { runCli } from '../../src/cli/program.js';
import { registerCheckConfig } from '../../src/cli/check-config.js';
import type { CliContext } from '../../src/cli/context.js';

const SECRET = 'sk-live-7f3a9c1e';
const SMTP_PASSWORD = 'smtp-pa55-word';
const WEBHOOK = 'https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX';
const SECRETS = [SECRET, SMTP_PASSWORD, WEBHOOK, 'XXXXSECRETXXXX'];
const ENV = { BOXWATCH_SECRET_KEY: SECRET, SMTP_URL: `smtp://boxwatch:${SMTP_PASSWORD}@mail.example.com:587`, SLACK_WEBHOOK_URL: WEBHOOK };

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-config-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe('loadConfig', () => {
  it('reads the file given as the path, then BOXWATCH_CONFIG, then ./boxwatch.yaml', () => {
    const a = write('a.yaml', 'gateway: { secret_key: "${BOXWATCH_SECRET_KEY}" }\nlog: { level: debug }\n');
    const b = write('b.yaml', 'gateway: { secret_key: "${BOXWATCH_SECRET_KEY}" }\nlog: { level: warn }\n');
    expect(loadConfig({ path: a, env: { ...ENV, BOXWATCH_CONFIG: b } })).toMatchObject({ source: a, config: { log: { level: 'debug' } } });
    expect(loadConfig({ env: { ...ENV, BOXWATCH_CONFIG: b } })).toMatchObject({ source: b, config: { log: { level: 'warn' } } });

    const cwd = process.cwd();
    const here = join(dir, 'cwd');
    mkdirSync(here, { recursive: true });
    writeFileSync(join(here, 'boxwatch.yaml'), 'gateway: { secret_key: x }\nlog: { level: error }\n');
    process.chdir(here);
    try {
      expect(loadConfig({ env: {} })).toMatchObject({ source: './boxwatch.yaml', config: { log: { level: 'error' } } });
    } finally {
      process.chdir(cwd);
    }
  });

  it('names a missing file, with a hint when none was given', () => {
    const missing = join(dir, 'nope.yaml');
    expect(() => loadConfig({ path: missing, env: {} })).toThrow(`cannot read ${missing}: no such file`);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(() => loadConfig({ env: {} })).toThrow(/^no configuration file: \.\/boxwatch\.yaml does not exist\. To make one:\n {2}boxwatch init /);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('redaction', () => {
  const text = `gateway:
  secret_key: \${BOXWATCH_SECRET_KEY}
notifiers:
  - { name: mail, type: email, smtp_url: "\${SMTP_URL}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: slack, type: slack, webhook_url: "\${SLACK_WEBHOOK_URL}" }
`;

  it('removes the key, SMTP passwords, webhook URLs and the admin token', () => {
    const token = 'admin-token-s3cr3t-0123456789';
    const config = parseConfig(`${text}http: { admin_token: "\${BOXWATCH_ADMIN_TOKEN}", base_path: /boxwatch }\n`, { ...ENV, BOXWATCH_ADMIN_TOKEN: token });
    expect(config.http.adminToken).toBe(token);
    expect(config.http.basePath).toBe('/boxwatch/');
    const redacted = redactConfig(config);
    expect(redacted.http.adminToken).toBe('[redacted]');
    expect(formatConfig(config)).not.toContain(token);
    expect(redacted.gateway.secretKey).toBe('[redacted]');
    expect(redacted.notifiers[0]).toMatchObject({ smtpUrl: 'smtp://boxwatch:[redacted]@mail.example.com:587' });
    expect(redacted.notifiers[1]).toMatchObject({ webhookUrl: '[redacted]' });
    const printed = formatConfig(config);
    const json = JSON.stringify(redacted);
    for (const secret of SECRETS) {
      expect(printed).not.toContain(secret);
      expect(json).not.toContain(secret);
    }
    // The original is untouched.
    expect(config.gateway.secretKey).toBe(SECRET);
  });

  it.each([
    ['smtp://mail.example.com:25', 'smtp://mail.example.com:25'],
    ['smtps://user@mail.example.com', 'smtps://user@mail.example.com'],
    ['smtps://user:pw@mail.example.com/?pool=true&pass=pw', 'smtps://user:[redacted]@mail.example.com/?pool=true&pass=[redacted]'],
    ['http://admin:pw@gw:8080/api', 'http://admin:[redacted]@gw:8080/api'],
    ['not a url', '[redacted]'],
  ])('redactUrl(%s)', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('never echoes a secret in validation errors', () => {
    const bad = `gateway: { secret_key: "\${BOXWATCH_SECRET_KEY}", base_url: "\${BOXWATCH_SECRET_KEY}" }
notifiers:
  - { name: s, type: slack, webhook_url: "not-a-url/\${BOXWATCH_SECRET_KEY}" }
  - { name: m, type: email, smtp_url: "ftp://u:\${BOXWATCH_SECRET_KEY}@h", from: a@example.com, to: [b@example.com] }
`;
    let error: unknown;
    try {
      parseConfig(bad, ENV);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const all = JSON.stringify(error, Object.getOwnPropertyNames(error)) + String((error as Error).message);
    expect((error as ConfigError).issues.map((i) => i.path)).toEqual(['gateway.base_url', 'notifiers[0].webhook_url', 'notifiers[1].smtp_url']);
    expect(all).not.toContain(SECRET);
    expect((error as Error).cause).toBeUndefined();
  });
});

describe('effective configuration', () => {
  it('prints YAML that parses back to the same configuration', () => {
    const config = parseConfig(readFileSync('config/boxwatch.example.yaml', 'utf8'), ENV);
    const again = parseConfig(formatConfig(config, { redact: false }), {});
    expect(again).toEqual(config);
    expect(parseConfig(formatConfig(demoConfig(), { redact: false }), {})).toEqual(demoConfig());
  });

  it('prints durations as text and `http: false`', () => {
    const printed = formatConfig(parseConfig('gateway: { secret_key: k }\nhttp: false\nalerting: { group_wait: 1h30m }\n', {}));
    expect(printed).toContain('details_every: 5m');
    expect(printed).toContain('rollup_retention: 400d');
    expect(printed).toContain('group_wait: 1h30m');
    expect(printed).toMatch(/^http: false$/m);
  });
});

describe('shipped configurations', () => {
  it('the example documents the defaults: its rules are the default rules', () => {
    const example = parseConfig(readFileSync('config/boxwatch.example.yaml', 'utf8'), ENV);
    const defaults = defaultConfig(SECRET);
    expect(example.rules).toEqual(defaults.rules);
    expect({ ...example, notifiers: [], rules: [] }).toEqual({ ...defaults, notifiers: [], rules: [] });
    expect(example.notifiers.map((n) => n.type)).toEqual(['email', 'slack', 'console']);
  });

  it('config/demo.yaml is the embedded demo configuration, with no environment needed', () => {
    expect(readFileSync('config/demo.yaml', 'utf8')).toBe(DEMO_CONFIG_YAML);
    const demo = demoConfig();
    expect(demo.gateway).toMatchObject({ baseUrl: 'http://127.0.0.1:8080', secretKey: 'boxwatch-dev-secret-key' });
    expect(demo.notifiers).toEqual([{ name: 'console', type: 'console', minSeverity: 'info', boxes: ['*'] }]);
    expect(demoConfig({ baseUrl: 'http://127.0.0.1:4321', storagePath: '/tmp/d.db' })).toMatchObject({
      gateway: { baseUrl: 'http://127.0.0.1:4321' },
      storage: { path: '/tmp/d.db' },
    });
  });

  it('defaultConfig takes the key literally', () => {
    expect(defaultConfig('a${b}').gateway.secretKey).toBe('a${b}');
  });
});

describe('boxwatch check-config', () => {
  function context(env: Record<string, string>): CliContext & { stdout: string; stderr: string } {
    const ctx = {
      stdout: '',
      stderr: '',
      out: (s: string) => {
        ctx.stdout += s;
      },
      err: (s: string) => {
        ctx.stderr += s;
      },
      env,
      signal: new AbortController().signal,
      isTTY: false,
    };
    return ctx;
  }

  it('prints every duration and size as a file writes them (90d, 256MiB), never as a number, and the output loads back', async () => {
    const file = write(
      'units.yaml',
      [
        'gateway: { secret_key: k, max_body: { device_list: 64MiB, make_call: 1500 } }',
        'storage: { raw_retention: 30d }',
        'calls: {}',
        'archive: { dir: ./rec, bandwidth: 4MiB }',
        'cluster: { lease: 45s }',
        'rules:',
        '  - { name: gone, kind: missing, severity: info, forget_after: 30d }',
        '  - { name: box-offline, kind: disconnected, severity: critical, for: 2m }',
        '',
      ].join('\n'),
    );
    const ctx = context({});
    expect(await runCli(['check-config', '--config', file], ctx, [registerCheckConfig])).toBe(0);
    const printed = ctx.stdout;
    for (const line of ['device_list: 64MiB', 'device_details: 256KiB', 'make_call: 1500', 'raw_retention: 30d', 'retention: 90d', 'bandwidth: 4MiB', 'max_size: 256MiB', 'lease: 45s', 'forget_after: 30d', 'for: 2m']) {
      expect(printed).toMatch(new RegExp(`^\\s*(- )?${line}$`, 'm'));
    }
    // No number of seven digits or more (milliseconds, bytes) is left anywhere in it.
    expect(printed).not.toMatch(/: \d{7,}$/m);
    expect(parseConfig(printed, {})).toEqual({ ...parseConfig(readFileSync(file, 'utf8'), {}), gateway: expect.anything(), gateways: expect.anything() });
  });

  it('prints the effective configuration with secrets redacted and exits 0', async () => {
    const file = write('good.yaml', readFileSync('config/boxwatch.example.yaml', 'utf8'));
    const ctx = context(ENV);
    expect(await runCli(['check-config', '--config', file], ctx, [registerCheckConfig])).toBe(0);
    expect(ctx.stdout).toContain(`# ${file}: valid.`);
    expect(ctx.stdout).toContain('secret_key: "[redacted]"');
    expect(ctx.stdout).toContain('smtp_url: smtp://boxwatch:[redacted]@mail.example.com:587');
    expect(ctx.stdout).toContain('details_every: 5m');
    for (const secret of SECRETS) expect(ctx.stdout + ctx.stderr).not.toContain(secret);
    expect(ctx.stderr).toBe('');
  });

  it('uses BOXWATCH_CONFIG when --config is not given', async () => {
    const file = write('env.yaml', 'gateway: { secret_key: k }\n');
    const ctx = context({ BOXWATCH_CONFIG: file });
    expect(await runCli(['check-config'], ctx, [registerCheckConfig])).toBe(0);
    expect(ctx.stdout).toContain(`# ${file}: valid.`);
  });

  it('lists every problem and exits 2 on a bad file, without a stack trace', async () => {
    const file = write('bad.yaml', 'gateway: { secret_key: "${BOXWATCH_SECRET_KEY}", timeout: 5x }\npoll: { details_every: 5x }\nlogg: {}\n');
    const ctx = context({});
    expect(await runCli(['check-config', '--config', file], ctx, [registerCheckConfig])).toBe(2);
    expect(ctx.stdout).toBe('');
    expect(ctx.stderr).toBe(
      `error: ${file} is invalid:\n` +
        '  gateway.secret_key: environment variable BOXWATCH_SECRET_KEY is not set\n' +
        '  gateway.timeout: invalid duration "5x" (use e.g. 30s, 5m, 2h, 7d)\n' +
        '  poll.details_every: invalid duration "5x" (use e.g. 30s, 5m, 2h, 7d)\n' +
        '  logg: unknown key (did you mean "log"?)\n',
    );
  });

  it('exits 2 when the file does not exist', async () => {
    const ctx = context({});
    expect(await runCli(['check-config', '--config', join(dir, 'absent.yaml')], ctx, [registerCheckConfig])).toBe(2);
    expect(ctx.stderr).toContain('absent.yaml: no such file');
    expect(ctx.stderr).not.toMatch(/\n\s+at /);
  });
});
