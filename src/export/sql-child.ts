/**
 * The process that runs one `boxwatch sql` query, so that the command can interrupt a long query
 * by killing it (better-sqlite3 runs a query synchronously, and SQLite cannot be stopped from
 * JavaScript while it runs). argv[2] is the job as JSON: { path, sql, format }. Rows go to stdout
 * as they come (json and csv) or once all are in (table: the columns are aligned); an error is
 * sent to the parent over IPC (exit 2 for a refused or invalid query, 1 for anything else).
 */
import { BoxwatchError, UsageError, errorMessage } from '../errors.js';
import { csvRow, formatTable } from '../table.js';
import { streamSink } from './sink.js';
import { openSqlSession, prepareQuery } from './sql.js';

export type SqlFormat = 'table' | 'json' | 'csv';

export interface SqlJob {
  path: string;
  sql: string;
  format: SqlFormat;
}

type Cell = unknown;

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function textCell(v: Cell, nullText: string): string {
  if (v === null || v === undefined) return nullText;
  if (v instanceof Uint8Array) return `x'${hex(v)}'`;
  return String(v);
}

function jsonCell(v: Cell): unknown {
  if (v instanceof Uint8Array) return hex(v);
  if (typeof v === 'bigint') return Number(v);
  return v ?? null;
}

async function runSqlJob(job: SqlJob, stdout: NodeJS.WritableStream): Promise<void> {
  const session = openSqlSession(job.path);
  try {
    const stmt = prepareQuery(session.db, job.sql).raw(true);
    const headers = stmt.columns().map((c) => c.name);
    const out = streamSink(stdout);
    if (job.format === 'table') {
      const rows: string[][] = [];
      for (const row of stmt.iterate() as Iterable<Cell[]>) rows.push(row.map((v) => textCell(v, 'NULL')));
      await out.write(formatTable(headers, rows));
      if (rows.length === 0) await out.write('(no rows)\n');
    } else if (job.format === 'csv') {
      await out.write(csvRow(headers) + '\n');
      for (const row of stmt.iterate() as Iterable<Cell[]>) await out.write(csvRow(row.map((v) => textCell(v, ''))) + '\n');
    } else {
      let first = true;
      await out.write('[');
      for (const row of stmt.iterate() as Iterable<Cell[]>) {
        const obj: Record<string, unknown> = {};
        headers.forEach((h, i) => (obj[h] = jsonCell(row[i])));
        await out.write((first ? '\n' : ',\n') + JSON.stringify(obj));
        first = false;
      }
      await out.write(first ? ']\n' : '\n]\n');
    }
    await out.flush();
  } finally {
    session.close();
  }
}

/** What the child reports over IPC when the query fails; the command turns it back into an error. */
export interface SqlChildError {
  usage: boolean;
  code: string;
  message: string;
}

async function main(): Promise<void> {
  try {
    await runSqlJob(JSON.parse(process.argv[2] ?? '{}') as SqlJob, process.stdout);
  } catch (err) {
    const report: SqlChildError = {
      usage: err instanceof UsageError,
      code: err instanceof BoxwatchError ? err.code : 'sql_failed',
      message: errorMessage(err),
    };
    if (process.send) process.send(report);
    else process.stderr.write(`error: ${report.message}\n`);
    process.exitCode = report.usage ? 2 : 1;
  }
  process.disconnect?.();
}

await main();
