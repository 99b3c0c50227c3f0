/**
 * Live updates for the dashboard: server-sent events. Each open page holds one stream
 * (`GET /events`); the app publishes one `cycle` event after every poll cycle (ok or failed), and
 * the page re-reads what it shows. A comment line every 25 s keeps proxies from closing an idle
 * stream. The number of open streams is capped so that a runaway client cannot exhaust the daemon.
 */
import type { ServerResponse } from 'node:http';

export interface CycleEvent {
  /** ISO time the cycle started. */
  startedAt: string;
  outcome: 'ok' | 'failed';
  boxes: number;
}

export interface LiveEvents {
  /** Sends an event to every open stream. */
  publish(event: CycleEvent): void;
  /** Takes over a response as an event stream; false when too many are open (answer 503). */
  attach(res: ServerResponse): boolean;
  /** Open streams. */
  readonly size: number;
  /** Ends every stream (the server is closing). */
  close(): void;
}

const HEARTBEAT_MS = 25_000;
export const MAX_STREAMS = 200;

export function createLiveEvents(options: { maxStreams?: number } = {}): LiveEvents {
  const streams = new Set<ServerResponse>();
  const max = options.maxStreams ?? MAX_STREAMS;
  let heartbeat: NodeJS.Timeout | undefined;
  let counter = 0;

  const write = (text: string): void => {
    for (const res of streams) res.write(text);
  };
  const ensureHeartbeat = (): void => {
    if (heartbeat !== undefined || streams.size === 0) return;
    heartbeat = setInterval(() => write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
  };
  const drop = (res: ServerResponse): void => {
    streams.delete(res);
    if (streams.size === 0) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
  };

  return {
    publish(event) {
      counter += 1;
      write(`id: ${counter}\nevent: cycle\ndata: ${JSON.stringify(event)}\n\n`);
    },
    attach(res) {
      if (streams.size >= max) return false;
      streams.add(res);
      res.on('close', () => drop(res));
      res.write('retry: 3000\n\n');
      ensureHeartbeat();
      return true;
    },
    get size() {
      return streams.size;
    },
    close() {
      for (const res of streams) res.end();
      streams.clear();
      clearInterval(heartbeat);
      heartbeat = undefined;
    },
  };
}
