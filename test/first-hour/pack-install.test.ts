/**
 * The documented way onto a server (docs/operations.md): `npm pack` in a clone, then
 * `npm install -g ./boxwatch-<version>.tgz` puts `boxwatch` on the PATH. This test packs the
 * project, installs the tarball into a temporary prefix and runs the installed command from an
 * empty directory, so nothing of the clone is used.
 *
 * One shortcut, for time: the install runs with `--ignore-scripts` and the tests copy in the
 * better-sqlite3 binding that `npm ci` built from the same source (a build from source takes
 * minutes on two cores). Everything else (the tarball's contents, the bin link, the
 * dependencies resolved from package.json, the paths to migrations and the config templates)
 * is the real install.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../e2e/build.js';

const run = promisify(execFile);
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

let tmp: string;
let prefix: string;
let packed: string[];

/** Runs the installed `boxwatch` in `cwd`; resolves with exit code and output, never throws. */
async function boxwatch(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  try {
    const r = await run(join(prefix, 'bin', 'boxwatch'), args, { cwd, env: { PATH: process.env['PATH'] ?? '', HOME: tmp, ...env }, timeout: 30_000 });
    return { code: 0, out: r.stdout, err: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, out: err.stdout ?? '', err: err.stderr ?? '' };
  }
}

beforeAll(async () => {
  ensureBuilt();
  tmp = mkdtempSync(join(tmpdir(), 'boxwatch-pack-'));
  prefix = join(tmp, 'prefix');
  const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: ROOT });
  packed = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
  const tarball = join(tmp, `boxwatch-${version}.tgz`);
  await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], { cwd: tmp, timeout: 120_000 });
  const binding = join('node_modules', 'better-sqlite3', 'build', 'Release');
  cpSync(join(ROOT, binding), join(prefix, 'lib', 'node_modules', 'boxwatch', binding), { recursive: true });
}, 180_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('npm pack, then npm install -g of the tarball', () => {
  it('the tarball carries the built program, the migrations, the configuration templates and the systemd unit, and no tests or sources', () => {
    expect(packed).toContain('dist/src/main.js');
    expect(packed).toContain('migrations/0001_init.sql');
    expect(packed).toContain('config/boxwatch.example.yaml');
    expect(packed).toContain('config/demo.yaml');
    expect(packed).toContain('deploy/boxwatch.service');
    expect(packed).toContain('dist/src/web/static/common.js');
    expect(packed.filter((p) => p.startsWith('src/') || p.startsWith('test/') || p.startsWith('dist/test/'))).toEqual([]);
  });

  it('puts boxwatch on the PATH of the prefix: --help answers', async () => {
    expect(existsSync(join(prefix, 'bin', 'boxwatch'))).toBe(true);
    const r = await boxwatch(['--help'], tmp);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: boxwatch /);
    expect(r.out).toContain('check-config');
  });

  it('init writes the example and check-config accepts it, from a directory outside the clone', async () => {
    const dir = mkdtempSync(join(tmp, 'etc-'));
    expect((await boxwatch(['init'], dir)).code).toBe(0);
    const r = await boxwatch(['check-config'], dir, { BOXWATCH_SECRET_KEY: 'k', SMTP_URL: 'smtp://127.0.0.1:2525', SLACK_WEBHOOK_URL: 'https://hooks.example.com/x' });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('valid');
  });

  it('the installed program opens and migrates a database with its native driver: a short demo runs, then sql reads every migration', async () => {
    const dir = mkdtempSync(join(tmp, 'demo-'));
    const demo = await boxwatch(['demo', '--duration', '2s', '--db', join(dir, 'demo.db')], dir);
    expect(demo.err).toBe('');
    expect(demo.code).toBe(0);
    const sql = await boxwatch(['sql', 'SELECT count(*) AS n FROM schema_migrations', '--db', join(dir, 'demo.db'), '--format', 'json'], dir);
    expect(sql.code).toBe(0);
    const migrations = packed.filter((p) => /^migrations\/\d{4}_.*\.sql$/.test(p)).length;
    expect(JSON.parse(sql.out)).toEqual([{ n: migrations }]);
  }, 240_000); // npm pack and a global install: a bound for a loaded machine
});
