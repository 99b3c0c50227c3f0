/**
 * `boxwatch init [--dir DIR] [--force]`: writes DIR/boxwatch.yaml, a copy of the commented example
 * configuration (config/boxwatch.example.yaml), and says what to do next: edit it, then
 * check-config, notify-test, run. Refuses to overwrite an existing file unless --force.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG_PATH, firstSteps } from '../config/load.js';
import { UsageError } from '../errors.js';
import { packageFile } from '../package-files.js';
import type { RegisterCommand } from './context.js';

export const registerInit: RegisterCommand = (program, ctx) => {
  program
    .command('init')
    .description('write a commented boxwatch.yaml (the example configuration) and say the next commands')
    .option('--dir <dir>', 'directory to write boxwatch.yaml into', '.')
    .option('--force', 'overwrite an existing boxwatch.yaml')
    .action((opts: { dir: string; force?: boolean }) => {
      const target = opts.dir === '.' ? DEFAULT_CONFIG_PATH : join(opts.dir, 'boxwatch.yaml');
      if (existsSync(target) && !opts.force) {
        throw new UsageError(`${target} exists already; not overwriting it (pass --force to replace it with the example)`);
      }
      mkdirSync(opts.dir, { recursive: true });
      copyFileSync(packageFile('config', 'boxwatch.example.yaml'), target);
      ctx.out(`wrote ${target} (the example configuration; every key is commented). Next:\n${firstSteps(target, { written: true })}\n`);
    });
};
