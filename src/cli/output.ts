/** Output formats shared by the read commands: aligned table, JSON, CSV. */
import { safeText as terminalSafe } from '../text.js';
import { Option } from 'commander';
import type { CliContext } from './context.js';
import { formatCsv, formatTable } from '../table.js';

export type OutputFormat = 'table' | 'json' | 'csv';

export function formatOption(choices: OutputFormat[]): Option {
  return new Option('-f, --format <format>', 'output format').choices(choices).default('table');
}

export function printRows(
  ctx: CliContext,
  format: OutputFormat,
  table: { headers: string[]; rows: string[][]; json: unknown; empty?: string },
): void {
  if (format === 'json') ctx.out(JSON.stringify(table.json, null, 2) + '\n');
  else if (format === 'csv') ctx.out(formatCsv(table.headers, table.rows));
  else if (table.rows.length === 0 && table.empty) ctx.out(table.empty + '\n');
  else ctx.out(formatTable(table.headers, table.rows));
}

/** Makes text from the gateway or boxes safe for a terminal: the one sanitiser of src/text.ts. */
export { terminalSafe };
/** The table and CSV writers (src/table.ts), for the commands. */
export { csvRow, formatCsv, formatTable } from '../table.js';
