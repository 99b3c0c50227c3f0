/**
 * Read commands work in a shell where the notifiers' secrets (and the gateway key) are not set:
 * only the sections a command uses are interpolated. `run` and `notify-test` still refuse an
 * unset variable, naming it. The database is written by the daemon (in-process, polling the
 * simulator over HTTP); the commands are the built CLI as child processes.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliRig, type CliRig } from '../cli/rig.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';

let rig: CliRig;
let serial: string;

beforeAll(async () => {
  await ensureBuilt();
  rig = await startCliRig();
  serial = rig.sim.sim.fleet.boxes[0]!.serial;
  rig.sim.sim.fleet.apply([rig.box(serial)], { kind: 'disconnect' });
  await rig.cycle();
}, 90_000);

afterAll(() => rig?.close());

/** No BOXWATCH_SECRET_KEY, SMTP_URL or SLACK_WEBHOOK_URL in this shell. */
const bare = (): { cwd: string } => ({ cwd: rig.dir });

describe('read commands without the secrets', () => {
  const config = (): string[] => ['--config', rig.configPath];
  it.each([
    ['status', () => ['status', ...config()], /^SERIAL\s+NAME\s+CONNECTED/],
    ['history', () => ['history', serial, ...config()], new RegExp(serial)],
    ['uptime', () => ['uptime', ...config()], /^SERIAL\s/],
    ['alerts', () => ['alerts', ...config()], /box-offline/],
  ])('%s reads the database the configuration names', async (_name, argv, expected) => {
    const r = await runBuilt(argv(), bare());
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(expected);
  });

  it('silence add and silence list', async () => {
    const add = await runBuilt(['silence', 'add', '--box', serial, '--for', '1h', '--comment', 'moving it', ...config()], bare());
    expect(add.err).toBe('');
    expect(add.code).toBe(0);
    const list = await runBuilt(['silence', 'list', ...config()], bare());
    expect(list.code).toBe(0);
    expect(list.out).toContain('moving it');
  });

  it('backup copies it', async () => {
    const target = join(rig.dir, 'copy.db');
    const r = await runBuilt(['backup', target, ...config()], bare());
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(existsSync(target)).toBe(true);
  });

  it('check-config --offline validates the file and lists the unset variables', async () => {
    const r = await runBuilt(['check-config', '--offline', ...config()], bare());
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('# not set in this shell (`boxwatch run` and `notify-test` need them): BOXWATCH_SECRET_KEY, SMTP_URL, SLACK_WEBHOOK_URL\n');
    expect(r.out).toContain('smtp_url: ${SMTP_URL} (not set)');
    expect(r.out).not.toContain('unset.invalid');
  });

  it('check-config --offline still reports a real mistake', async () => {
    const typo = join(rig.dir, 'typo.yaml');
    writeFileSync(typo, readFileSync(rig.configPath, 'utf8').replace('to: [ops@example.com]', 'to: [ops@example.com], form: x'));
    const r = await runBuilt(['check-config', '--offline', '--config', typo], bare());
    expect(r.code).toBe(2);
    expect(r.err).toContain('notifiers[0].form (notifier "ops-mail"): unknown key (did you mean "from"?)');
    expect(r.err).not.toContain('SMTP_URL');
  });
});

describe('commands that use the secrets refuse, naming the variable (exit 2)', () => {
  it.each([
    ['run', ['run']],
    ['notify-test', ['notify-test']],
    ['check-config', ['check-config']],
  ])('%s', async (_name, argv) => {
    const r = await runBuilt([...argv, '--config', rig.configPath], { ...bare(), env: { BOXWATCH_SECRET_KEY: 'k' } });
    expect(r.code).toBe(2);
    expect(r.err).toContain('notifiers[0].smtp_url (notifier "ops-mail"): environment variable SMTP_URL is not set');
    expect(r.err).toContain('notifiers[1].webhook_url (notifier "ops-slack"): environment variable SLACK_WEBHOOK_URL is not set');
  });
});
