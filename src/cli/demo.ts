/**
 * `boxwatch demo [--duration 90s]`: boxwatch with no configuration at all. Starts the Gateway
 * simulator in this process with the scripted scenario config/scenarios/demo.yaml at 60x speed,
 * runs the daemon against it with the built-in demo configuration (config/demo.yaml: console
 * notifier, database ./data/demo.db, recreated on every demo), prints the dashboard's address
 * (127.0.0.1:9464, or a free port when that one is taken) with a fresh admin token for silences,
 * prints alerts as they fire and resolve, and a status table at the end. Without --duration it
 * runs until Ctrl-C.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Command } from 'commander';
import { createApp } from '../app.js';
import { demoConfig } from '../config/index.js';
import { tryParseDuration } from '../duration.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { packageFile } from '../package-files.js';
import { loadScenario } from '../sim/scenario.js';
import { startSimulator } from '../sim/server.js';
import { openStore } from '../store/index.js';
import { untilAborted, type CliContext, type RegisterCommand } from './context.js';
import { printStatus } from './status.js';

interface DemoOptions {
  duration?: string;
  db: string;
}

export const registerDemo: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('demo')
    .description('run boxwatch against its built-in simulator with a scripted scenario (no configuration needed)')
    .option('--duration <duration>', 'stop after this long, e.g. 90s (default: until Ctrl-C)')
    .option('--db <file>', 'database file (recreated)', './data/demo.db')
    .action(async (opts: DemoOptions) => {
      const durationMs = opts.duration === undefined ? undefined : tryParseDuration(opts.duration);
      if (durationMs === undefined && opts.duration !== undefined) throw new UsageError(`--duration: invalid duration "${opts.duration}" (e.g. 90s, 5m)`);
      if (durationMs !== undefined && durationMs <= 0) throw new UsageError('--duration must be above 0');

      const scenario = await loadScenario(packageFile('config', 'scenarios', 'demo.yaml'));
      const base = demoConfig();
      const sim = await startSimulator({ port: 0, key: base.gateway.secretKey, scenario });
      // A fresh token per demo: the page asks for it before it creates or expires a silence.
      const adminToken = randomBytes(12).toString('hex');
      let config = demoConfig({ baseUrl: sim.url, storagePath: opts.db, adminToken });
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${opts.db}${suffix}`, { force: true });

            // Gateway failures during the scripted outage are told by the gateway_unreachable alert.
      const logger = createLogger({ level: 'error', destination: process.stderr });
      const stdout = { write: (chunk: string, callback?: (err?: Error | null) => void) => (ctx.out(chunk), callback?.(), true) };
      let app = createApp({ config, logger, stdout });
      try {
        await app.start();
      } catch (err) {
        if (!(err instanceof BoxwatchError && err.code === 'http_listen')) throw err;
        await app.stop();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${opts.db}${suffix}`, { force: true });
        config = { ...config, http: { ...config.http, listen: '127.0.0.1:0' } }; // 9464 is taken: any free port
        app = createApp({ config, logger, stdout });
        await app.start();
      }
      ctx.out(
        `boxwatch demo: a simulated fleet of ${sim.sim.fleet.boxes.length} boxes at ${sim.sim.speed}x speed (one real second is one simulated minute),\n` +
          `polled every 2 s; alerts appear below as they fire and resolve. Database: ${opts.db}. ` +
          (durationMs === undefined ? 'Ctrl-C to stop.\n' : `Stopping after ${opts.duration}.\n`) +
          `\nDashboard: ${app.httpUrl ?? ''}/  (admin token for silences: ${adminToken})\n\n`,
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([untilAborted(ctx.signal), new Promise<void>((resolve) => (timer = durationMs === undefined ? undefined : setTimeout(resolve, durationMs)))]);
      clearTimeout(timer);
      await app.stop();
      await sim.close();

      const store = openStore(opts.db, { readonly: true });
      try {
        ctx.out('\nFleet status at the end of the demo (boxes in trouble first):\n\n');
        printStatus(ctx, store, Date.now(), 'table'); // last_seen is stored on our clock
      } finally {
        store.close();
      }
      ctx.out(`\nExplore it: npx boxwatch history BX-00007 --db ${opts.db} --since 10m (also status, uptime, alerts --db ${opts.db}).\n`);
    });
};
