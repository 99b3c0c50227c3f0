/**
 * Silences in PostgreSQL (`silences`): written by `boxwatch silence`, read by every cycle. Rows as
 * in SQLite (src/store/repository-rows.ts): a row whose matchers are damaged silences nothing and
 * is not listed.
 */
import { expireSilence, silenceState, type Silence } from '../../alerts/silences.js';
import type { DamagedRows } from '../damaged-rows.js';
import { newSilence, toSilence, type SilenceDbRow } from '../repository-rows.js';
import type { PostgresDatabase, Transaction } from './database.js';

export class PostgresSilences {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly damaged: DamagedRows,
  ) {}

  async addSilence(input: Omit<Silence, 'id'>, now: number): Promise<Silence> {
    const { silence, values } = newSilence(input, now);
    await this.db.query('INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', values);
    return silence;
  }

  /** Silences not yet ended at `now` (pending and active); with `all`, every silence. In `tx` when given (a cycle's). */
  async silences(now: number, options: { all?: boolean } = {}, tx: Transaction = this.db): Promise<Silence[]> {
    const rows = options.all
      ? await tx.query<SilenceDbRow>('SELECT * FROM silences ORDER BY starts_at, id COLLATE "C"')
      : await tx.query<SilenceDbRow>('SELECT * FROM silences WHERE ends_at > $1 ORDER BY starts_at, id COLLATE "C"', [now]);
    return rows.flatMap((r) => toSilence(r, this.damaged) ?? []);
  }

  async silence(id: string): Promise<Silence | undefined> {
    const [row] = await this.db.query<SilenceDbRow>('SELECT * FROM silences WHERE id = $1', [id]);
    return row === undefined ? undefined : toSilence(row, this.damaged);
  }

  /** Ends a silence now (a pending one too: expireSilence decides); false if there is none with that id or it had already ended. */
  async expireSilence(id: string, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<SilenceDbRow>('SELECT * FROM silences WHERE id = $1 FOR UPDATE', [id]);
      const found = row === undefined ? undefined : toSilence(row, this.damaged);
      if (found === undefined || silenceState(found, now) === 'expired') return false;
      const ended = expireSilence(found, now);
      await tx.query('UPDATE silences SET starts_at = $1, ends_at = $2 WHERE id = $3', [ended.startsAt, ended.endsAt, id]);
      return true;
    });
  }
}
