/**
 * Acknowledgements in PostgreSQL (`acks`, migrations/postgres/0002_history.sql): written by
 * `boxwatch ack` and `POST /api/acks`, read by every cycle. Rows as in SQLite
 * (src/store/sqlite/acks.ts) except the alert's key: derived from rule and serial (see
 * alert-states.ts).
 */
import type { Ack } from '../../alerts/acks.js';
import { alertKey } from '../../alerts/types.js';
import type { Severity } from '../../vocabulary.js';
import type { PostgresDatabase, Transaction } from './database.js';

interface AckRow {
  id: number;
  rule: string;
  serial: string;
  firing_since: number;
  severity: Severity;
  acked_by: string;
  comment: string;
  at: number;
  until: number | null;
}

function toAck(r: AckRow): Ack {
  return {
    id: r.id,
    key: alertKey(r.rule, r.serial),
    rule: r.rule,
    serial: r.serial,
    firingSince: r.firing_since,
    severity: r.severity,
    by: r.acked_by,
    comment: r.comment,
    at: r.at,
    until: r.until,
  };
}

export class PostgresAcks {
  constructor(private readonly db: PostgresDatabase) {}

  async add(ack: Omit<Ack, 'id'>): Promise<Ack> {
    const [row] = await this.db.query<{ id: number }>(
      'INSERT INTO acks (rule, serial, firing_since, severity, acked_by, comment, at, until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id',
      [ack.rule, ack.serial, ack.firingSince, ack.severity, ack.by, ack.comment, ack.at, ack.until],
    );
    return { ...ack, id: (row as { id: number }).id };
  }

  /** The latest ack of each alert, by key (in `tx` when given: a cycle's). */
  async latestByKey(tx: Transaction = this.db): Promise<Map<string, Ack>> {
    const rows = await tx.query<AckRow>('SELECT DISTINCT ON (rule, serial) * FROM acks ORDER BY rule, serial, id DESC');
    return new Map(rows.map((r) => [alertKey(r.rule, r.serial), toAck(r)]));
  }

  async since(since: number): Promise<Ack[]> {
    return (await this.db.query<AckRow>('SELECT * FROM acks WHERE at >= $1 ORDER BY id DESC', [since])).map(toAck);
  }
}
