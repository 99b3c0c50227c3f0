/**
 * Silences in `silences`: written by `boxwatch silence`, read by every cycle. Matchers are JSON
 * arrays; a row whose matchers are damaged is set aside (it silences nothing, is not listed), so
 * one bad row never stops a cycle.
 */
import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { expireSilence, silenceState, type Silence } from '../../alerts/silences.js';
import { isStringArray, type DamagedRows } from '../damaged-rows.js';

interface SilenceRow {
  id: string;
  boxes: string | null;
  rules: string | null;
  starts_at: number;
  ends_at: number;
  comment: string;
  created_by: string | null;
}

export class SqliteSilences {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    private readonly damaged: DamagedRows,
  ) {
    this.s = {
      insert: db.prepare('INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      endingAfter: db.prepare('SELECT * FROM silences WHERE ends_at > ? ORDER BY starts_at, id'),
      all: db.prepare('SELECT * FROM silences ORDER BY starts_at, id'),
      byId: db.prepare('SELECT * FROM silences WHERE id = ?'),
      setTimes: db.prepare('UPDATE silences SET starts_at = ?, ends_at = ? WHERE id = ?'),
    };
  }

  addSilence(input: Omit<Silence, 'id'>, now: number): Silence {
    const silence: Silence = { id: randomUUID().slice(0, 8), ...input };
    this.s.insert.run(
      silence.id,
      silence.matchers.boxes?.length ? JSON.stringify(silence.matchers.boxes) : null,
      silence.matchers.rules?.length ? JSON.stringify(silence.matchers.rules) : null,
      silence.startsAt,
      silence.endsAt,
      silence.comment,
      silence.createdBy ?? null,
      now,
    );
    return silence;
  }

  /** Silences not yet ended at `now` (pending and active); with `all`, every silence. */
  silences(now: number, options: { all?: boolean } = {}): Silence[] {
    const rows = (options.all ? this.s.all.all() : this.s.endingAfter.all(now)) as SilenceRow[];
    return rows.flatMap((r) => this.toSilence(r) ?? []);
  }

  silence(id: string): Silence | undefined {
    const row = this.s.byId.get(id) as SilenceRow | undefined;
    return row === undefined ? undefined : this.toSilence(row);
  }

  /** Ends a silence now (a pending one too: it is expired, never pending again); false if there is none with that id or it had already ended. */
  expireSilence(id: string, now: number): boolean {
    return this.db
      .transaction(() => {
        const found = this.silence(id);
        if (found === undefined || silenceState(found, now) === 'expired') return false;
        const ended = expireSilence(found, now); // the rule (a pending one ends too) is the alerts module's
        this.s.setTimes.run(ended.startsAt, ended.endsAt, id);
        return true;
      })
      .immediate();
  }

  private toSilence(row: SilenceRow): Silence | undefined {
    const boxes = this.damaged.read<string[] | null>('silences', row.id, row.boxes, isStringArray, null);
    const rules = this.damaged.read<string[] | null>('silences', row.id, row.rules, isStringArray, null);
    if (boxes === undefined || rules === undefined) return undefined;
    return {
      id: row.id,
      matchers: { ...(boxes ? { boxes } : {}), ...(rules ? { rules } : {}) },
      startsAt: row.starts_at,
      endsAt: row.ends_at,
      comment: row.comment,
      createdBy: row.created_by,
    };
  }
}
