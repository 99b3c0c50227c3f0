/**
 * `boxwatch sql "SELECT ..."`: read-only SQL over the live database, with the views of
 * docs/storage.md and the points()/points_all() functions that decode samples (src/export/sql.ts).
 * The query runs in a child process (src/export/sql-child.ts) that is killed after --timeout.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { Option } from 'commander';
import { tryParseDuration, formatDuration } from '../duration.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { packageFile } from '../package-files.js';
import type { SqlChildError, SqlJob } from '../export/sql-child.js';
import { storeNotFound } from '../store/errors.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, type OutputFormat } from './output.js';
import { dbOption, sqliteOnly } from './store-access.js';

interface SqlOptions {
  config?: string;
  db?: string;
  format: OutputFormat;
  timeout: string;
}

/** The child's script: beside this module when built; from the sources (tests), the built one. */
function childScript(): string {
  const sibling = fileURLToPath(new URL('../export/sql-child.js', import.meta.url));
  return existsSync(sibling) ? sibling : packageFile('dist', 'src', 'export', 'sql-child.js');
}

function runChild(job: SqlJob, timeoutMs: number, ctx: CliContext): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childScript(), JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let failure: SqlChildError | null = null;
    let stderr = '';
    let timedOut = false;
    child.stdout?.setEncoding('utf8').on('data', (s: string) => ctx.out(s));
    child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('message', (m) => (failure = m as SqlChildError));
    const kill = (): void => void child.kill('SIGKILL');
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    ctx.signal.addEventListener('abort', kill, { once: true });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', kill);
      const f = failure as SqlChildError | null;
      if (timedOut) reject(new BoxwatchError('sql_timeout', `query interrupted after ${formatDuration(timeoutMs)} (--timeout)`));
      else if (f !== null) reject(f.usage ? new UsageError(f.message) : new BoxwatchError(f.code, f.message));
      else if (code !== 0) reject(new BoxwatchError('sql_failed', `the query process ended abnormally${stderr ? `: ${stderr.trim()}` : ''}`));
      else resolve();
    });
  });
}

export const registerSql: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('sql')
    .description('read-only SQL over the history (views v_*, functions points() and points_all(); see docs/storage.md)')
    .argument('<query>', 'one SELECT statement, e.g. "SELECT * FROM points(\'BX-00001\', \'battery\', \'2026-11-01\', \'2026-11-02\')"')
    .addOption(formatOption(['table', 'json', 'csv']))
    .addOption(new Option('--timeout <duration>', 'interrupt the query after this long').default('30s'))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action(async (query: string, opts: SqlOptions) => {
      const timeoutMs = tryParseDuration(opts.timeout);
      if (timeoutMs === undefined || timeoutMs <= 0) throw new UsageError(`--timeout: invalid duration "${opts.timeout}" (use e.g. 10s, 2m)`);
      const { path } = sqliteOnly('sql', opts, ctx, 'copy it to a SQLite file with `boxwatch migrate --from postgres://... --to sqlite:FILE` and pass --db FILE, or query PostgreSQL with psql');
      if (path !== ':memory:' && !existsSync(path)) throw storeNotFound(path);
      await runChild({ path, sql: query, format: opts.format }, timeoutMs, ctx);
    });
};
