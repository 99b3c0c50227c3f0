/**
 * `boxwatch check-config [--config FILE]`: validates the configuration and prints the effective
 * configuration (every default filled in) as YAML, with the secret key, passwords and webhook
 * URLs redacted. A bad file exits 2 and lists every problem by path (runCli prints ConfigError).
 * `--offline` checks the file in a shell without the daemon's secrets: unset variables are
 * listed and shown as `${NAME} (not set)` instead of being errors. What is valid but likely a
 * mistake is said in `# warning:` lines (`configWarnings`), the exit status staying 0.
 */
import type { Config } from '../config/index.js';
import { loadConfig } from '../config/load.js';
import { formatConfig } from '../config/print.js';
import type { RegisterCommand } from './context.js';

export const registerCheckConfig: RegisterCommand = (program, ctx) => {
  program
    .command('check-config')
    .description('Validate the configuration and print it with defaults filled in and secrets redacted')
    .option('--config <file>', 'configuration file (env BOXWATCH_CONFIG, default ./boxwatch.yaml)')
    .option('--offline', "check the file without this shell's secrets: an unset ${VAR} is listed, not an error")
    .action((options: { config?: string; offline?: boolean }) => {
      const { config, source, unset } = loadConfig({ path: options.config, env: ctx.env, uses: options.offline ? [] : undefined });
      ctx.out(`# ${source}: valid. Effective configuration (defaults filled in, secrets redacted):\n`);
      for (const warning of configWarnings(config)) ctx.out(`# warning: ${warning}\n`);
      if (unset.length > 0) {
        const names = [...new Set(unset.map((u) => u.name))];
        ctx.out(`# not set in this shell (\`boxwatch run\` and \`notify-test\` need them): ${names.join(', ')}\n`);
      }
      ctx.out(formatConfig(config, { redact: true, unset }));
    });
};

/** What a valid configuration may get wrong, one sentence each (docs/operations.md). */
export function configWarnings(config: Pick<Config, 'cluster' | 'archive'>): string[] {
  const warnings: string[] = [];
  if (config.cluster !== undefined && config.archive !== undefined) {
    warnings.push(
      `cluster: with archive: each replica archives the recordings of the accounts it leads into archive.dir (${config.archive.dir}), ` +
        'which must be one storage shared by all replicas; a replica that sees another live replica announce another directory raises archive_failing (unshared_dir) and logs "archive.dir is not shared" ' +
        '(docs/operations.md, "The recording archive with replicas")',
    );
  }
  return warnings;
}
