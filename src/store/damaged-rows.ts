/**
 * The one way every JSON column is read (alert states, transitions, silences, the group_wait
 * queue, the outbox). A value that does not parse, or parses to the wrong shape, is a damaged row:
 * it is set aside (the caller skips it, rebuilds it or marks it dead), logged once per row and
 * counted per table (`boxwatch_damaged_rows_total{table}` in /metrics). Reading never throws, so
 * a damaged row never halts polling or a notifier.
 */
import { silentLogger, type Logger } from '../log.js';

export type JsonTable = 'alert_states' | 'alert_transitions' | 'silences' | 'notification_queue' | 'outbox';

export class DamagedRows {
  private readonly seen = new Set<string>();
  private readonly perTable = new Map<JsonTable, number>();
  private listener: ((table: JsonTable) => void) | null = null;

  constructor(private logger: Logger = silentLogger) {}

  /** Where damaged rows are reported from now on (the app wires its logger and metrics). */
  report(logger: Logger, onDamaged: (table: JsonTable) => void): void {
    this.logger = logger;
    this.listener = onDamaged;
  }

  /**
   * The parsed value of one JSON column, or undefined when the row is damaged. `text` null stands
   * for an absent value and yields `absent`.
   */
  read<T>(table: JsonTable, rowId: string | number, text: string | null, looksRight: (value: unknown) => boolean, absent?: T): T | undefined {
    if (text === null) return absent;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (value !== undefined && looksRight(value)) return value as T;
    this.damaged(table, rowId);
    return undefined;
  }

  /** Counts and logs (once per row) a row found damaged. */
  damaged(table: JsonTable, rowId: string | number): void {
    const key = `${table}\u0000${rowId}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.perTable.set(table, (this.perTable.get(table) ?? 0) + 1);
    this.logger.error({ table, row: rowId }, 'damaged row in the database (unreadable JSON): set aside');
    this.listener?.(table);
  }

  /** Damaged rows met so far, per table. */
  counts(): { table: JsonTable; count: number }[] {
    return [...this.perTable].map(([table, count]) => ({ table, count }));
  }
}

/** Shape checks shared by the repositories. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
export const isScalar = (v: unknown): boolean => v === null || typeof v === 'number' || typeof v === 'string';
