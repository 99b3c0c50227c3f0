/** Output formats shared by the read commands: aligned table, JSON, CSV. */
import { safeText as terminalSafe } from '../text.js';
import { Option } from 'commander';
import type { CliContext } from './context.js';

export type OutputFormat = 'table' | 'json' | 'csv';

export function formatOption(choices: OutputFormat[]): Option {
  return new Option('-f, --format <format>', 'output format').choices(choices).default('table');
}

/** Plain aligned columns, two spaces apart; the last column is not padded. */
export function formatTable(headers: readonly string[], rawRows: readonly (readonly string[])[]): string {
  // Cells can carry text from boxes: control characters are shown escaped, never sent to the terminal.
  const rows = rawRows.map((r) => r.map(terminalSafe));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** RFC 4180 CSV. */
export function formatCsv(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  return [headers, ...rows].map(csvRow).join('\n') + '\n';
}

/** One CSV line (no line end), for output streamed a row at a time. */
export function csvRow(cells: readonly string[]): string {
  const cell = (raw: string): string => {
    const c = terminalSafe(raw);
    return /[",]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c;
  };
  return cells.map(cell).join(',');
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
