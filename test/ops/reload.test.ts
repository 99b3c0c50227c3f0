/**
 * `boxwatch run` reloads its configuration on request (SIGHUP in the executable): in-process
 * through runCli with a context the test controls, against the simulator over real HTTP, on a
 * real SQLite file, with the console notifier writing to the captured stdout.
 */
import Database from 'better-sqlite3';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allCommands } from '../../src/cli/index.js';
import { runCli } from '../../src/cli/program.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { startSlackReceiver } from '../helpers/slack-receiver.js';
import { testContext, waitFor, type TestContext } from './helpers.js';

/** The outbox rows of the daemon's database, read with a connection of our own. */
function outboxRows(path: string): { notifier: string; status: string; attempts: number; last_error: string | null }[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT notifier, status, attempts, last_error FROM outbox ORDER BY id').all() as { notifier: string; status: string; attempts: number; last_error: string | null }[];
  } finally {
    db.close();
  }
}

const KEY = 'ops-reload-key';

let dir: string;
let sim: RunningSimulator;
let ctx: TestContext;
let run: Promise<number> | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-reload-'));
  sim = await startSimulator({ port: 0, key: KEY, devices: 3, seed: 11 });
  ctx = testContext({ KEY });
  run = undefined;
});

afterEach(async () => {
  ctx.abort();
  await run;
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(path: string, options: { schedule: string; rules: string; http?: string; notifiers?: string }): void {
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "${options.schedule}" }
storage: { path: "${join(dir, 'boxwatch.db')}" }
rules:
${options.rules}
alerting: { group_wait: 0s }
notifiers: [{ name: console, type: console }${options.notifiers ?? ''}]
http: ${options.http ?? 'false'}
log: { level: info }
`,
  );
}

const BATTERY_ONLY = '  - { name: battery-low, kind: low_battery, below: 1, severity: warning }';
const WITH_OFFLINE = `${BATTERY_ONLY}\n  - { name: box-offline, kind: disconnected, severity: critical }`;

describe('boxwatch run: reload on SIGHUP', () => {
  it('applies a valid new configuration, rejects an invalid one with every problem logged, and keeps alert state across reloads', async () => {
    const fleet = sim.sim.fleet;
    const box = fleet.boxes[1];
    if (!box) throw new Error('no box');
    sim.sim.sync();
    fleet.apply([box], { kind: 'disconnect' });

    const path = join(dir, 'boxwatch.yaml');
    writeConfig(path, { schedule: '* * * * * *', rules: BATTERY_ONLY });
    run = runCli(['run', '--config', path], ctx, allCommands);
    await waitFor('the daemon to poll', () => ctx.logs().find((l) => l.msg === 'boxwatch polling'));

    // 1. A new rule takes effect: the disconnected box now fires.
    writeConfig(path, { schedule: '* * * * * *', rules: WITH_OFFLINE });
    ctx.reload();
    const firing = (): string[] => ctx.lines().filter((l) => /^ {2}FIRING .*· box-offline, /.test(l) && l.includes(box.serial));
    await waitFor('box-offline to fire after the reload', () => firing().length > 0);
    expect(ctx.logs().filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);

    // 2. An invalid file is rejected, every problem logged, the running configuration kept.
    writeFileSync(
      path,
      `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }\npoll: { schedule: "every now and then", details_every: soon }\nstorage: { path: "${join(dir, 'boxwatch.db')}" }\nhttp: false\n`,
    );
    ctx.reload();
    const rejected = await waitFor('the rejection', () => ctx.logs().find((l) => l.msg.startsWith('configuration rejected')));
    const problems = rejected['problems'] as { path: string; message: string }[];
    expect(problems.map((p) => p.path).sort()).toEqual(['poll.details_every', 'poll.schedule']);
    expect(rejected.level).toBe(50); // error
    expect(ctx.logs().filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);

    // 3. A valid change of schedule: the firing alert is carried over (it lives in SQLite), so it
    //    is not notified again, and its resolution is notified by the new app.
    writeConfig(path, { schedule: '*/2 * * * * *', rules: WITH_OFFLINE });
    ctx.reload();
    await waitFor('the second reload', () => ctx.logs().filter((l) => l.msg === 'configuration reloaded').length === 2);
    const polling = ctx.logs().filter((l) => l.msg === 'boxwatch polling');
    expect(polling.map((l) => l['schedule'])).toEqual(['* * * * * *', '* * * * * *', '*/2 * * * * *']);
    sim.sim.sync();
    fleet.apply([box], { kind: 'connect' });
    await waitFor('box-offline to resolve', () => ctx.lines().some((l) => /^ {2}RESOLVED .*· box-offline, /.test(l) && l.includes(box.serial)));
    expect(firing()).toHaveLength(1);

    ctx.abort();
    expect(await run).toBe(0);
    expect(ctx.logs().at(-1)?.msg).toBe('boxwatch stopped');
  });

  it('a notifier removed by a reload: its waiting messages are given up with the reason and reported once on the others', async () => {
    const slack = await startSlackReceiver();
    try {
      slack.respondWith({ status: 500, body: 'internal_error' }); // Slack keeps failing: its message waits for a retry
      const fleet = sim.sim.fleet;
      const box = fleet.boxes[0]!;
      sim.sim.sync();
      fleet.apply([box], { kind: 'disconnect' });
      const path = join(dir, 'boxwatch.yaml');
      const slackNotifier = `, { name: ops-slack, type: slack, webhook_url: "${slack.url}" }`;
      writeConfig(path, { schedule: '* * * * * *', rules: WITH_OFFLINE, notifiers: slackNotifier });
      run = runCli(['run', '--config', path], ctx, allCommands);
      await waitFor('Slack to be tried', () => slack.requests.length > 0);
      const db = join(dir, 'boxwatch.db');
      await waitFor('the Slack message to wait for a retry', () => outboxRows(db).some((r) => r.notifier === 'ops-slack' && r.status === 'pending' && r.attempts === 1));

      writeConfig(path, { schedule: '* * * * * *', rules: WITH_OFFLINE });
      ctx.reload();
      const notice = await waitFor('the delivery-failure notice on the console', () => ctx.lines().find((l) => l.includes('DELIVERY FAILURE')));
      expect(notice).toContain('"ops-slack"');
      expect(ctx.logs().find((l) => l.msg === 'messages for notifiers no longer configured were given up')?.['messages']).toBe(1);
      expect(outboxRows(db).filter((r) => r.notifier === 'ops-slack')).toEqual([
        { notifier: 'ops-slack', status: 'dead', attempts: 1, last_error: 'notifier "ops-slack" is no longer configured' },
      ]);
      // Nothing waits any more (the outbox depth is back to 0), and a further reload reports nothing again.
      ctx.reload();
      await waitFor('the second reload', () => ctx.logs().filter((l) => l.msg === 'configuration reloaded').length === 2);
      expect(outboxRows(db).filter((r) => r.status === 'pending' || r.status === 'sending')).toEqual([]);
      expect(ctx.lines().filter((l) => l.includes('DELIVERY FAILURE'))).toHaveLength(1);
      ctx.abort();
      expect(await run).toBe(0);
    } finally {
      await slack.close();
    }
  });

  it('reload requests that arrive during a reload are served once more afterwards, and stopping waits for them', async () => {
    const path = join(dir, 'boxwatch.yaml');
    writeConfig(path, { schedule: '* * * * * *', rules: BATTERY_ONLY });
    run = runCli(['run', '--config', path], ctx, allCommands);
    await waitFor('the daemon to poll', () => ctx.logs().find((l) => l.msg === 'boxwatch polling'));
    ctx.reload();
    ctx.reload();
    ctx.reload();
    await waitFor('two reloads', () => ctx.logs().filter((l) => l.msg === 'configuration reloaded').length === 2);
    ctx.reload();
    ctx.abort();
    expect(await run).toBe(0);
    const msgs = ctx.logs().map((l) => l.msg);
    expect(msgs.filter((m) => m === 'reloading the configuration').length).toBeGreaterThanOrEqual(2);
    expect(msgs.at(-1)).toBe('boxwatch stopped');
  });

  it('goes back to the previous configuration when the new one validates but cannot start (its HTTP port is taken)', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const path = join(dir, 'boxwatch.yaml');
      writeConfig(path, { schedule: '* * * * * *', rules: BATTERY_ONLY });
      run = runCli(['run', '--config', path], ctx, allCommands);
      await waitFor('the daemon to poll', () => ctx.logs().find((l) => l.msg === 'boxwatch polling'));
      writeConfig(path, { schedule: '*/5 * * * * *', rules: BATTERY_ONLY, http: `{ listen: "127.0.0.1:${port}" }` });
      ctx.reload();
      await waitFor('the old configuration to run again', () => ctx.logs().filter((l) => l.msg === 'boxwatch polling').length === 2);
      const logs = ctx.logs();
      expect(logs.some((l) => l.msg === 'the new configuration failed to start; going back to the previous one')).toBe(true);
      expect(logs.some((l) => l.msg === 'configuration reloaded')).toBe(false);
      expect(logs.filter((l) => l.msg === 'boxwatch polling').map((l) => l['schedule'])).toEqual(['* * * * * *', '* * * * * *']);
      ctx.abort();
      expect(await run).toBe(0);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});
