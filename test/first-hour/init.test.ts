/**
 * `boxwatch init` and `run` without a configuration file, from the outside (the built CLI as a
 * child process in an empty directory).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';

const EXAMPLE = readFileSync(join(ROOT, 'config/boxwatch.example.yaml'), 'utf8');
let dir: string;

beforeAll(() => ensureBuilt());
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-init-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('boxwatch init', () => {
  it('writes the commented example as ./boxwatch.yaml and says the three next commands', async () => {
    const r = await runBuilt(['init'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'boxwatch.yaml'), 'utf8')).toBe(EXAMPLE);
    expect(r.out).toMatch(/^wrote \.\/boxwatch\.yaml /);
    const commands = r.out.split('\n').filter((l) => /^ {2}boxwatch /.test(l)).map((l) => l.trim().split(/\s+#/)[0]);
    expect(commands).toEqual(['boxwatch check-config', 'boxwatch notify-test', 'boxwatch run']);
    expect(r.out).toContain('export BOXWATCH_SECRET_KEY=');
  });

  it('the written file is valid once its variables are set', async () => {
    await runBuilt(['init'], { cwd: dir });
    const r = await runBuilt(['check-config'], {
      cwd: dir,
      env: { BOXWATCH_SECRET_KEY: 'k', SMTP_URL: 'smtp://127.0.0.1:2525', SLACK_WEBHOOK_URL: 'https://hooks.example.com/x' },
    });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  });

  it('--dir writes there, and the next commands name the file', async () => {
    const r = await runBuilt(['init', '--dir', 'etc/boxwatch'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, 'etc/boxwatch/boxwatch.yaml'))).toBe(true);
    expect(r.out).toContain('  boxwatch run --config etc/boxwatch/boxwatch.yaml');
  });

  it('never overwrites an existing file without --force (exit 2)', async () => {
    writeFileSync(join(dir, 'boxwatch.yaml'), 'mine\n');
    const r = await runBuilt(['init'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'error: ./boxwatch.yaml exists already; not overwriting it (pass --force to replace it with the example)\nsee boxwatch init --help\n',
    );
    expect(readFileSync(join(dir, 'boxwatch.yaml'), 'utf8')).toBe('mine\n');
    expect((await runBuilt(['init', '--force'], { cwd: dir })).code).toBe(0);
    expect(readFileSync(join(dir, 'boxwatch.yaml'), 'utf8')).toBe(EXAMPLE);
  });
});

describe('run without a configuration file', () => {
  it('says exactly what to do: init, edit, check-config, notify-test, run (exit 2)', async () => {
    const r = await runBuilt(['run'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^error: no configuration file: \.\/boxwatch\.yaml does not exist\. To make one:\n {2}boxwatch init /);
    for (const command of ['boxwatch check-config', 'boxwatch notify-test', 'boxwatch run']) expect(r.err).toContain(`  ${command} `);
    expect(r.err).toContain('--config FILE');
    expect(r.err).not.toContain('is invalid');
  });
});
