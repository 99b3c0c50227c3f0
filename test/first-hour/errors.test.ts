/**
 * Errors say what to do next, from the outside: the built CLI as a child process, its stderr and
 * exit code. A usage error is one line and a `see boxwatch COMMAND --help` hint; a missing
 * database says to start the daemon or pass --db; a port in use names http.listen and another
 * process; a configuration error names the rule by its name; an account key that cannot be sent
 * in a header (a trailing newline, a character outside Latin-1) names its field, never the key.
 */
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/sim/server.js';
import { openStore } from '../../src/store/index.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';

let dir: string;
let db: string;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-errors-'));
  db = join(dir, 'boxwatch.db');
  openStore(db).close(); // an empty, migrated database
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a usage error is one line and a hint, exit 2', () => {
  it('an unknown box serial (the command checks it)', async () => {
    const r = await runBuilt(['history', 'BX-9999', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toBe('error: unknown box serial "BX-9999" (see `boxwatch status`)\nsee boxwatch history --help\n');
  });

  it('an unknown option and a bad value (commander checks them)', async () => {
    const unknown = await runBuilt(['history', 'BX-00001', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toBe("error: unknown option '--bogus'\nsee boxwatch history --help\n");
    const nested = await runBuilt(['silence', 'add', '--for', 'soon', '--comment', 'x', '--box', 'BX-1', '--db', db]);
    expect(nested.code).toBe(2);
    expect(nested.err.trim().split('\n')).toHaveLength(2);
    expect(nested.err).toMatch(/\nsee boxwatch silence add --help\n$/);
  });
});

describe('a missing database says what to do', () => {
  it('names `boxwatch run` and --db', async () => {
    const missing = join(dir, 'nowhere', 'boxwatch.db');
    for (const argv of [['status'], ['alerts'], ['uptime'], ['backup', join(dir, 'copy.db')]]) {
      const r = await runBuilt([...argv, '--db', missing]);
      expect(r.code, argv[0]).toBe(1);
      expect(r.err).toBe(
        `error [store_not_found]: no database at ${missing}: start the daemon with \`boxwatch run\` (it creates the database), or pass --db FILE to read another one\n`,
      );
    }
  });
});

describe('the HTTP port held by another process', () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  it('run exits 1 naming http.listen and another process', async () => {
    const config = join(dir, 'port.yaml');
    writeFileSync(config, `gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\nstorage: { path: "${join(dir, 'port.db')}" }\nhttp: { listen: "127.0.0.1:${port}" }\nlog: { level: error }\n`);
    const r = await runBuilt(['run', '--config', config]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `error [http_listen]: cannot listen on 127.0.0.1:${port} (http.listen): another process (another boxwatch?) holds the port; stop it, or set http.listen to a free port (or http: false)\n`,
    );
  });
});

describe('a configuration error names the rule', () => {
  it('by its name beside its index', async () => {
    const config = join(dir, 'rules.yaml');
    writeFileSync(
      config,
      `gateway: { secret_key: k }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: battery-low, kind: low_battery, below: 200, severity: warning }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "not a url" }
`,
    );
    const r = await runBuilt(['check-config', '--config', config]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('  rules[1].below (rule "battery-low"): must be at most 100\n');
    expect(r.err).toContain('  notifiers[0].webhook_url (notifier "ops-slack"): must be an http:// or https:// URL\n');
  });
});

describe('a configuration too large to be real is refused at once, exit 2 (bounds)', () => {
  it('a YAML bomb (aliases that expand without bound) is a configuration error naming the limit', async () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (const [i, name] of ['b', 'c', 'd', 'e', 'f', 'g'].entries()) levels.push(`${name}: &${name} [${Array(9).fill(`*${'abcdef'[i]}`).join(',')}]`);
    const file = join(dir, 'bomb.yaml');
    writeFileSync(file, `${levels.join('\n')}\n`);
    const r = await runBuilt(['check-config', '--config', file, '--offline']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/is invalid:\n {2}yaml: refused: its aliases expand to more than 1000 nodes/);
  });

  it('more than 1,000 rules is refused naming the limit; a long list of problems is cut after 20', async () => {
    const many = join(dir, 'many-rules.yaml');
    writeFileSync(many, `gateway: { secret_key: k }\nrules:\n${Array.from({ length: 1_001 }, (_, i) => `  - { name: r${i}, kind: disconnected, severity: warning }`).join('\n')}\n`);
    const tooMany = await runBuilt(['check-config', '--config', many, '--offline']);
    expect(tooMany.code).toBe(2);
    expect(tooMany.err).toContain('rules: 1001 entries; at most 1000');
    const bad = join(dir, 'bad-rules.yaml');
    writeFileSync(bad, `gateway: { secret_key: k }\nrules:\n${Array.from({ length: 50 }, (_, i) => `  - { name: r${i}, kind: disconnected }`).join('\n')}\n`);
    const listed = await runBuilt(['check-config', '--config', bad, '--offline']);
    expect(listed.code).toBe(2);
    expect(listed.err.split('\n').filter((l) => l.includes('is required'))).toHaveLength(20);
    expect(listed.err).toContain('  ... and 30 more problems');
  });
});

describe('a gateway error says what to check', () => {
  it('a refused key names gateway.secret_key and BOXWATCH_SECRET_KEY (exit 1)', async () => {
    const sim = await startSimulator({ port: 0, key: 'the-right-key-000', devices: 2 });
    try {
      const r = await runBuilt(['calls', 'list', '--gateway', sim.url], { env: { BOXWATCH_SECRET_KEY: 'a-wrong-key-0000' } });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^error \[unauthorized\]: .*\nthe gateway refused the account key: check gateway.secret_key in the configuration, usually taken from the BOXWATCH_SECRET_KEY environment variable\n$/);
      expect(r.err).not.toContain('a-wrong-key-0000');
    } finally {
      await sim.close();
    }
  });
});

describe('an account key that cannot be sent in a header is a configuration error naming the field, exit 2', () => {
  const KEY = 'sk-live-4b9e2d7a1c-SECRET';
  const single = (): string => {
    const file = join(dir, 'key-single.yaml');
    writeFileSync(file, `gateway: { secret_key: "\${BOXWATCH_SECRET_KEY}" }\nstorage: { path: "${join(dir, 'key.db')}" }\n`);
    return file;
  };

  it('a trailing newline (a secret file written with echo): run and check-config refuse to start', async () => {
    const config = single();
    for (const argv of [['run', '--config', config], ['check-config', '--config', config, '--offline']]) {
      const r = await runBuilt(argv, { env: { BOXWATCH_SECRET_KEY: `${KEY}\n` }, cwd: dir });
      expect(r.code, argv[0]).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toContain('\n  gateway.secret_key: must not contain control characters (a trailing newline?)\n');
      expect(r.err.split('\n').filter((l) => l.includes('secret_key'))).toHaveLength(1);
      expect(r.err).not.toContain(KEY);
    }
  });

  it('a character outside Latin-1 in a key of gateways:', async () => {
    const config = join(dir, 'key-accounts.yaml');
    writeFileSync(config, `gateways:\n  - { name: east, secret_key: "\${EAST_KEY}" }\n  - { name: west, secret_key: "\${WEST_KEY}" }\n`);
    const r = await runBuilt(['check-config', '--config', config, '--offline'], { env: { EAST_KEY: KEY, WEST_KEY: `${KEY}€` } });
    expect(r.code).toBe(2);
    expect(r.err).toContain('\n  gateways[1].secret_key: must contain only Latin-1 characters (a character pasted from a document?)\n');
    expect(r.err.split('\n').filter((l) => l.includes('secret_key'))).toHaveLength(1);
    expect(r.err).not.toContain(KEY);
  });

  it('BOXWATCH_SECRET_KEY given to a call command is checked too (one line and the hint)', async () => {
    const r = await runBuilt(['calls', 'list', '--gateway', 'http://127.0.0.1:9'], { env: { BOXWATCH_SECRET_KEY: `${KEY}\r\n` }, cwd: dir });
    expect(r.code).toBe(2);
    expect(r.err).toBe('error: BOXWATCH_SECRET_KEY must not contain control characters (a trailing newline?)\nsee boxwatch calls list --help\n');
  });
});
