/**
 * `boxwatch migrate --from sqlite:FILE --to postgres://...` (and back): registered here, run by
 * migrate-run.ts, imported only when the command runs (other commands never load the PostgreSQL
 * driver).
 */
import type { Command } from 'commander';
import type { CliContext, RegisterCommand } from './context.js';

export const registerMigrate: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('migrate')
    .description('copy a whole database between SQLite and PostgreSQL (into an empty target) and verify the counts')
    .requiredOption('--from <db>', 'the database to copy: sqlite:FILE or postgres://user:password@host:port/db')
    .requiredOption('--to <db>', 'where to copy it: a new sqlite:FILE or an empty PostgreSQL database (postgres://...)')
    .action(async (opts: { from: string; to: string }) => {
      const { migrateDatabase, nameOf, parseDatabaseEnd } = await import('./migrate-run.js');
      const from = parseDatabaseEnd(opts.from, '--from');
      const to = parseDatabaseEnd(opts.to, '--to');
      ctx.out(`copying ${nameOf(from)} to ${nameOf(to)}\n`);
      const report = await migrateDatabase(from, to, (t) => ctx.out(`  ${t.table.padEnd(20)} ${t.rows} rows\n`));
      if (report.skipped.length > 0) ctx.out(`not copied (a table only one of them has): ${report.skipped.join(', ')}\n`);
      const rows = report.tables.reduce((n, t) => n + t.rows, 0);
      ctx.out(`copied ${report.tables.length} tables, ${rows} rows into ${nameOf(to)}; every count verified\n`);
    });
};
