/**
 * `boxwatch run`: polls the gateway on the configured schedule and keeps the history, until
 * SIGINT or SIGTERM, which end it after the cycle in flight.
 */
import { Option, type Command } from 'commander';
import { createApp } from '../app.js';
import { loadConfig } from '../config/index.js';
import { createLogger, type LogFormat } from '../log.js';
import { untilAborted, type CliContext, type RegisterCommand } from './context.js';

export function chooseLogFormat(configured: 'auto' | LogFormat, flag: LogFormat | undefined, isTTY: boolean): LogFormat {
  if (flag) return flag;
  if (configured !== 'auto') return configured;
  return isTTY ? 'pretty' : 'json';
}

export const registerRun: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('run')
    .description('poll the gateway on schedule and keep the history (until SIGINT/SIGTERM)')
    .option('-c, --config <file>', 'configuration file (default: $BOXWATCH_CONFIG, else ./boxwatch.yaml)')
    .addOption(new Option('--log-format <format>', 'log format (default: pretty on a terminal, else json)').choices(['json', 'pretty']))
    .action(async (opts: { config?: string; logFormat?: LogFormat }) => {
      const { config, source } = loadConfig({ path: opts.config, env: ctx.env });
      const logger = createLogger({ level: config.log.level, format: chooseLogFormat(config.log.format, opts.logFormat, ctx.isTTY) });
      const app = createApp({ config, logger });
      logger.info({ config: source }, 'boxwatch starting');
      await app.start();
      await untilAborted(ctx.signal);
      logger.info('stopping: finishing the cycle in flight');
      await app.stop();
      logger.info('boxwatch stopped');
    });
};
