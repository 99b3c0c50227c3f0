/**
 * What the HTTP API reads of the alerts (http/api.ts's AlertsReader): `/api/alerts` as alert views
 * (newest first) and the open alerts of the box views (`/api/boxes`). The daemon wires it.
 */
import type { Clock } from '../clock.js';
import { withAcks } from '../alerts/acks.js';
import type { AlertState } from '../alerts/types.js';
import { alertJson, newestFirst, readAlertViews, type AlertJson, type AlertViewConfig, type AlertViewSource } from './alerts.js';
import { staleAfterMs } from './boxes.js';

const WEEK_MS = 7 * 86_400_000;

export interface ApiReader {
  list(query: { activeOnly: boolean; since: number | undefined }): Promise<AlertJson[]>;
  states(): Promise<Iterable<AlertState>>;
  staleAfterMs: number;
}

/**
 * `list`: the alerts open now and those with transitions in the last 7 days, newest first (the
 * latest change first); `since` keeps only alerts that entered their current state since then,
 * with or without `activeOnly` (pending and firing ones).
 */
export function apiReader(source: AlertViewSource, config: AlertViewConfig & { rules: readonly { kind: string; maxAge?: number }[] }, clock: Clock): ApiReader {
  return {
    async list({ activeOnly, since }) {
      const now = clock.now();
      const views = await readAlertViews(source, config, { from: since ?? now - WEEK_MS, activeOnly, changedSince: since }, now);
      return views.sort(newestFirst).map(alertJson);
    },
    // Each with the ack in effect, so that /api/boxes and the overview show it.
    states: async () => withAcks((await source.states()).values(), (await source.acks?.()) ?? new Map(), clock.now()),
    staleAfterMs: staleAfterMs(config),
  };
}
