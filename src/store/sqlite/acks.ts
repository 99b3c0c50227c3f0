/**
 * Acknowledgements in `acks` (migrations/0005_acks.sql): written by `boxwatch ack` and
 * `POST /api/acks`, read by every cycle (CycleView.acks) and by the views. Rows are only added (a
 * newer ack of an alert supersedes an older one); retention.ts prunes them with the alert history.
 */
import type Database from 'better-sqlite3';
import type { Ack, AckRepository } from '../../alerts/acks.js';
import type { Severity } from '../../vocabulary.js';

interface AckRow {
  id: number;
  key: string;
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
  return { id: r.id, key: r.key, rule: r.rule, serial: r.serial, firingSince: r.firing_since, severity: r.severity, by: r.acked_by, comment: r.comment, at: r.at, until: r.until };
}

export class SqliteAcks implements AckRepository {
  private readonly s;

  constructor(db: Database.Database) {
    this.s = {
      insert: db.prepare(
        'INSERT INTO acks (key, rule, serial, firing_since, severity, acked_by, comment, at, until) VALUES (@key, @rule, @serial, @firingSince, @severity, @by, @comment, @at, @until)',
      ),
      latest: db.prepare('SELECT * FROM acks WHERE id IN (SELECT MAX(id) FROM acks GROUP BY key)'),
      since: db.prepare('SELECT * FROM acks WHERE at >= ? ORDER BY id DESC'),
    };
  }

  add(ack: Omit<Ack, 'id'>): Ack {
    const id = Number(this.s.insert.run(ack).lastInsertRowid);
    return { ...ack, id };
  }

  latestByKey(): Map<string, Ack> {
    return new Map((this.s.latest.all() as AckRow[]).map((r) => [r.key, toAck(r)]));
  }

  since(since: number): Ack[] {
    return (this.s.since.all(since) as AckRow[]).map(toAck);
  }
}
