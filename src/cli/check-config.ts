/**
 * `boxwatch check-config [--config FILE]`: validates the configuration and prints the effective
 * configuration (every default filled in) as YAML, with the secret key, passwords and webhook
 * URLs redacted. A bad file exits 2 and lists every problem by path (runCli prints ConfigError).
 */
import { loadConfig } from '../config/load.js';
import { formatConfig } from '../config/print.js';
import type { RegisterCommand } from './context.js';

export const registerCheckConfig: RegisterCommand = (program, ctx) => {
  program
    .command('check-config')
    .description('Validate the configuration and print it with defaults filled in and secrets redacted')
    .option('--config <file>', 'configuration file (env BOXWATCH_CONFIG, default ./boxwatch.yaml)')
    .action((options: { config?: string }) => {
      const { config, source } = loadConfig({ path: options.config, env: ctx.env });
      ctx.out(`# ${source}: valid. Effective configuration (defaults filled in, secrets redacted):\n`);
      ctx.out(formatConfig(config, { redact: true }));
    });
};
