/**
 * Acknowledgements as JSON: the one shape of `boxwatch ack`'s answer, `alerts`, `status` and the
 * API (`ack` of an alert or a box's alert, `POST /api/acks`, `GET /api/acks`).
 */
import type { Ack } from '../alerts/acks.js';
import { alertId } from '../alerts/types.js';
import { isoTime, isoOrNull } from '../time-format.js';

export interface AckJson {
  id: number;
  /** The alert's printable id. */
  alert: string;
  by: string;
  comment: string;
  at: string;
  /** null: until the alert resolves. */
  until: string | null;
}

export function ackJson(a: Ack): AckJson {
  return { id: a.id, alert: alertId(a.rule, a.serial), by: a.by, comment: a.comment, at: isoTime(a.at), until: isoOrNull(a.until) };
}
