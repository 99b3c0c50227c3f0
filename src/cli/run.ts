/**
 * `boxwatch run`: polls the gateway on the configured schedule and keeps the history, until
 * SIGINT or SIGTERM, which end it after the cycle in flight.
 *
 * SIGHUP (a reload request through `ctx.onReload`) re-reads the same configuration file. A file
 * that does not validate is rejected: every problem is logged and the running configuration
 * stays. A valid one replaces the running app: the old app stops after its cycle in flight (its
 * delivery in flight is recorded, its database connection closed), then a new app starts from the
 * new configuration on the database it names. Alert state, silences and the outbox are in SQLite,
 * so they carry over; in-memory metrics start again from zero (Prometheus treats that as a
 * counter reset). Replacing the app rather than patching it in place keeps one code path for
 * every key (schedule, gateway, rules, notifiers, http) and matches a restart, which is tested.
 */
import { Writable } from 'node:stream';
import { Option, type Command } from 'commander';
import { openApp, type App } from '../app.js';
import { loadConfig, type Config } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { createLogger, type LogFormat, type Logger } from '../log.js';
import { wantsColour, type LineSink } from '../notify/console.js';
import { untilAborted, type CliContext, type RegisterCommand } from './context.js';

export function chooseLogFormat(configured: 'auto' | LogFormat, flag: LogFormat | undefined, isTTY: boolean): LogFormat {
  if (flag) return flag;
  if (configured !== 'auto') return configured;
  return isTTY ? 'pretty' : 'json';
}

interface RunOptions {
  config?: string;
  logFormat?: LogFormat;
}

export const registerRun: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('run')
    .description('poll the gateway on schedule, alert and notify (until SIGINT/SIGTERM; SIGHUP reloads the configuration)')
    .option('-c, --config <file>', 'configuration file (default: $BOXWATCH_CONFIG, else ./boxwatch.yaml)')
    .addOption(new Option('--log-format <format>', 'log format (default: pretty on a terminal, else json)').choices(['json', 'pretty']))
    .action(async (opts: RunOptions) => {
      const load = (): { config: Config; source: string } => loadConfig({ path: opts.config, env: ctx.env });
      const first = load();
      const format = chooseLogFormat(first.config.log.format, opts.logFormat, ctx.isTTY);
      const colour = wantsColour(ctx.isTTY, ctx.env);
      const logger = createLogger({ level: first.config.log.level, format, colour, destination: format === 'json' ? outStream(ctx) : undefined });
      const consoleSink: LineSink = {
        colour,
        write(chunk, callback) {
          ctx.out(chunk);
          callback?.();
          return true;
        },
      };
      // Another daemon taking the database over (this one's heartbeat had stopped) ends the command.
      const daemon: Daemon = new Daemon(first.config, first.source, logger, (config) => openApp({ config, logger, stdout: consoleSink, onLockLost: (err) => daemon.abandon(err) }), load);
      logger.info({ config: first.source }, 'boxwatch starting');
      // Subscribed before the start, so that a SIGHUP during it is served once it is done.
      const unsubscribe = ctx.onReload?.(() => daemon.requestReload()) ?? (() => undefined);
      try {
        await daemon.start().catch(async (err: unknown) => {
          await daemon.stop().catch(() => undefined); // close what was opened (the database)
          throw err;
        });
        // A reload that leaves no app running (neither the new nor the old configuration starts) ends the command.
        await Promise.race([untilAborted(ctx.signal), daemon.failed]);
      } finally {
        unsubscribe();
      }
      logger.info('stopping: finishing the cycle in flight');
      await daemon.stop();
      logger.info('boxwatch stopped');
    });
};

/** JSON log lines through ctx.out (stdout in the executable; captured in tests). */
function outStream(ctx: CliContext): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      ctx.out(chunk.toString());
      callback();
    },
  });
}

/**
 * The running app and its reloads, one at a time: requests during a reload (or during the start)
 * are served by one more reload after it.
 */
class Daemon {
  private app: App | null = null;
  private reloading: Promise<void> | null = null;
  private again = false;
  private stopping = false;
  private started = false;
  private fail: (err: unknown) => void = () => undefined;
  /** Rejects when a reload leaves no app running. */
  readonly failed = new Promise<never>((_resolve, reject) => {
    this.fail = reject;
  });

  constructor(
    private config: Config,
    private readonly source: string,
    private readonly logger: Logger,
    /** Opens the configuration's store and creates the app on it (openApp). */
    private readonly make: (config: Config) => Promise<App>,
    private readonly load: () => { config: Config },
  ) {
    this.failed.catch(() => undefined); // observed by the command; never an unhandled rejection
  }

  /** Opens the store and starts the app; on failure what was opened is closed by `stop()`. */
  async start(): Promise<void> {
    this.app = await this.make(this.config);
    await this.app.start();
    this.started = true;
    this.kick();
  }

  /** The running app gave up (its database was taken over): the command ends with `err`. */
  abandon(err: Error): void {
    this.fail(err);
  }

  requestReload(): void {
    if (this.stopping) return;
    this.again = true;
    this.kick();
  }

  /** Starts the reload loop unless it runs already (it then picks the request up) or the start is not done. */
  private kick(): void {
    if (this.again && this.started && !this.reloading) this.reloading = this.reloadLoop();
  }

  private async reloadLoop(): Promise<void> {
    try {
      while (this.again && !this.stopping) {
        this.again = false;
        await this.reloadOnce();
      }
    } catch (err) {
      this.logger.fatal({ err }, 'no configuration could be started; exiting');
      this.fail(err);
    } finally {
      this.reloading = null; // in the same step as the last check of `again`: no request is lost
    }
  }

  /** Waits for a reload in progress, then stops the app. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.reloading;
    const app = this.app;
    this.app = null;
    await app?.stop();
  }

  private async reloadOnce(): Promise<void> {
    const { logger, source } = this;
    logger.info({ config: source }, 'reloading the configuration');
    let next: Config;
    try {
      next = this.load().config;
    } catch (err) {
      if (err instanceof ConfigError) {
        const n = err.issues.length;
        logger.error({ config: source, problems: err.issues }, `configuration rejected (${n} problem${n === 1 ? '' : 's'}); keeping the running one`);
      } else {
        logger.error({ config: source, err }, 'cannot reload the configuration; keeping the running one');
      }
      return;
    }
    if (this.stopping) return;
    logger.info('new configuration is valid: stopping the running one after its cycle in flight');
    const old = this.app;
    this.app = null;
    await old?.stop();
    logger.level = next.log.level;
    try {
      this.app = await this.startApp(next);
      this.config = next;
      logger.info({ config: source, schedule: next.poll.schedule, rules: next.rules.length, notifiers: next.notifiers.length }, 'configuration reloaded');
    } catch (err) {
      logger.error({ err }, 'the new configuration failed to start; going back to the previous one');
      logger.level = this.config.log.level;
      this.app = await this.startApp(this.config);
    }
  }

  /** Creates and starts an app; on failure releases what it opened and rethrows. */
  private async startApp(config: Config): Promise<App> {
    const app = await this.make(config);
    try {
      await app.start();
      return app;
    } catch (err) {
      await app.stop().catch(() => undefined);
      throw err;
    }
  }
}
