/** Tables and CSV as the CLI and `boxwatch sql` print them; every cell made safe for a terminal. */
import { safeText as terminalSafe } from './text.js';

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
