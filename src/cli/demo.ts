/**
 * `boxwatch demo [--duration 90s] [--fresh]`: boxwatch with no configuration at all. Starts the
 * Gateway simulator in this process with the scripted scenario config/scenarios/demo.yaml at 60x
 * speed, runs the daemon against it with the built-in demo configuration (config/demo.yaml:
 * console notifier, database ./data/demo.db), prints the dashboard's address (127.0.0.1:9464, or
 * a free port when that one is taken) with a fresh admin token for silences, prints alerts as they
 * fire and resolve, and a status table at the end. Without --duration it runs until Ctrl-C.
 *
 * One clock: the daemon runs on the simulator's clock, so every time and duration the demo
 * prints (alert durations, `last seen`, the status table) and stores is simulated time. The demo
 * configuration's durations are written in real time (so that `boxwatch run --config
 * config/demo.yaml` against `boxwatch sim` behaves the same) and are scaled by the speed here.
 *
 * A database left by an earlier demo is kept, renamed `demo-<time>.db` beside it (the time of its
 * last write); `--fresh` replaces it instead.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { createApp } from '../app.js';
import { systemClock, type Clock } from '../clock.js';
import { demoConfig, type Config } from '../config/index.js';
import { tryParseDuration } from '../duration.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { wantsColour } from '../notify/console.js';
import { packageFile } from '../package-files.js';
import type { Simulator } from '../sim/simulator.js';
import { openStore } from '../store/index.js';
import { untilAborted, type CliContext, type RegisterCommand } from './context.js';
import { printStatus } from './status.js';
import { isoTime } from '../time-format.js';

interface DemoOptions {
  duration?: string;
  db: string;
  fresh?: boolean;
}

const DB_FILES = ['', '-wal', '-shm'];

export const registerDemo: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('demo')
    .description('run boxwatch against its built-in simulator with a scripted scenario (no configuration needed)')
    .option('--duration <duration>', 'stop after this long, e.g. 90s (default: until Ctrl-C)')
    .option('--db <file>', 'database file (an earlier one is kept as demo-<time>.db beside it)', './data/demo.db')
    .option('--fresh', 'replace the database of an earlier demo instead of keeping it')
    .action(async (opts: DemoOptions) => {
      const durationMs = opts.duration === undefined ? undefined : tryParseDuration(opts.duration);
      if (durationMs === undefined && opts.duration !== undefined) throw new UsageError(`--duration: invalid duration "${opts.duration}" (e.g. 90s, 5m)`);
      if (durationMs !== undefined && durationMs <= 0) throw new UsageError('--duration must be above 0');

      // The simulator is loaded when it runs, not by every command (`run`).
      const { loadScenario } = await import('../sim/scenario.js');
      const { startSimulator } = await import('../sim/server.js');
      const scenario = await loadScenario(packageFile('config', 'scenarios', 'demo.yaml'));
      const base = demoConfig();
      const sim = await startSimulator({ port: 0, key: base.gateway.secretKey, scenario });
      const clock = simulatedClock(sim.sim);
      // A fresh token per demo: the page asks for it before it creates or expires a silence.
      const adminToken = randomBytes(12).toString('hex');
      let config = onSimulatedTime(demoConfig({ baseUrl: sim.url, storagePath: opts.db, adminToken }), sim.sim.speed);
      const kept = opts.fresh ? removeDatabase(opts.db) : keepDatabase(opts.db);

      // Gateway failures during the scripted outage are told by the gateway_unreachable alert.
      const logger = createLogger({ level: 'error', destination: process.stderr });
      const colour = wantsColour(ctx.isTTY, ctx.env);
      const stdout = { colour, write: (chunk: string, callback?: (err?: Error | null) => void) => (ctx.out(chunk), callback?.(), true) };
      let app = createApp({ config, logger, clock, scheduleClock: systemClock, stdout, clockRate: sim.sim.speed });
      try {
        await app.start();
      } catch (err) {
        if (!(err instanceof BoxwatchError && err.code === 'http_listen')) throw err;
        await app.stop();
        removeDatabase(opts.db);
        config = { ...config, http: { ...config.http, listen: '127.0.0.1:0' } }; // 9464 is taken: any free port
        app = createApp({ config, logger, clock, scheduleClock: systemClock, stdout, clockRate: sim.sim.speed });
        await app.start();
      }
      app.store.markSimulatedClock(); // the read commands measure it on its own clock
      ctx.out(
        `boxwatch demo: a simulated fleet of ${sim.sim.fleet.boxes.length} boxes at ${sim.sim.speed}x speed (one real second is one simulated minute),\n` +
          `polled every 2 s. Every time below is simulated time. Alerts appear as they fire and resolve.\n` +
          `Database: ${opts.db}${kept ? ` (the previous demo's is kept as ${kept})` : ''}. ` +
          (durationMs === undefined ? 'Ctrl-C to stop.\n' : `Stopping after ${opts.duration}.\n`) +
          `\nDashboard: ${app.httpUrl ?? ''}/  (admin token for silences: ${adminToken})\n\n`,
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([untilAborted(ctx.signal), new Promise<void>((resolve) => (timer = durationMs === undefined ? undefined : setTimeout(resolve, durationMs)))]);
      clearTimeout(timer);
      const end = clock.now();
      await app.stop();
      await sim.close();

      const store = openStore(opts.db, { readonly: true });
      try {
        ctx.out('\nFleet status at the end of the demo (boxes in trouble first):\n\n');
        await printStatus(ctx, store, end, 'table');
      } finally {
        store.close();
      }
      ctx.out(
        `\nDatabase: ${opts.db} (simulated time; the read commands measure it from its last poll). Explore it:\n` +
          `  npx boxwatch history BX-00007 --db ${opts.db} --since 30m\n` +
          `  npx boxwatch uptime --db ${opts.db} --since 2h      (also status, alerts --db ${opts.db})\n`,
      );
    });
};

/** The simulator's clock: now() is simulated time, and sleep(ms) waits ms of simulated time. */
export function simulatedClock(sim: Pick<Simulator, 'now' | 'speed'>): Clock {
  return { now: () => sim.now(), sleep: (ms, signal) => systemClock.sleep(ms / sim.speed, signal) };
}

/**
 * The demo configuration for an app on the simulated clock: its real-time durations times
 * `speed`. Not scaled: the stale rule's max_age (compared with the gateway's last_seen, simulated
 * time already), the gateway timeout (a network timer), and group_wait (the app waits for it
 * with a timer in real time, so 2s stays about 2 real seconds).
 */
export function onSimulatedTime(config: Config, speed: number): Config {
  const x = (ms: number): number => ms * speed;
  const { alerting } = config;
  return {
    ...config,
    poll: { ...config.poll, detailsEvery: x(config.poll.detailsEvery) },
    rules: config.rules.map((r) => ({ ...r, for: x(r.for), keepFiringFor: x(r.keepFiringFor) })),
    alerting: {
      ...alerting,
      repeatInterval: x(alerting.repeatInterval),
      delivery: { initialBackoff: x(alerting.delivery.initialBackoff), maxBackoff: x(alerting.delivery.maxBackoff), maxAge: x(alerting.delivery.maxAge) },
    },
  };
}

/** Renames an earlier demo database to `demo-<time of its last write>.db`; returns the new path. */
function keepDatabase(db: string): string | undefined {
  if (!existsSync(db)) return undefined;
  const stamp = isoTime(statSync(db).mtimeMs).slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  const name = basename(db).replace(/(\.db)?$/, (ext) => `-${stamp}${ext}`);
  const target = join(dirname(db), name);
  for (const suffix of DB_FILES) if (existsSync(`${db}${suffix}`)) renameSync(`${db}${suffix}`, `${target}${suffix}`);
  return target;
}

function removeDatabase(db: string): undefined {
  for (const suffix of DB_FILES) rmSync(`${db}${suffix}`, { force: true });
  return undefined;
}
