/**
 * Silences in `silences`: written by `boxwatch silence`, read by every cycle. Matchers are JSON
 * arrays; a row whose matchers are damaged is set aside (it silences nothing, is not listed), so
 * one bad row never stops a cycle.
 */
import type Database from 'better-sqlite3';
import { expireSilence, silenceState, type Silence } from '../../alerts/silences.js';
import type { DamagedRows } from '../damaged-rows.js';
import { newSilence, toSilence, type SilenceDbRow } from '../repository-rows.js';

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
    const { silence, values } = newSilence(input, now);
    this.s.insert.run(...values);
    return silence;
  }

  /** Silences not yet ended at `now` (pending and active); with `all`, every silence. */
  silences(now: number, options: { all?: boolean } = {}): Silence[] {
    const rows = (options.all ? this.s.all.all() : this.s.endingAfter.all(now)) as SilenceDbRow[];
    return rows.flatMap((r) => toSilence(r, this.damaged) ?? []);
  }

  silence(id: string): Silence | undefined {
    const row = this.s.byId.get(id) as SilenceDbRow | undefined;
    return row === undefined ? undefined : toSilence(row, this.damaged);
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
}
