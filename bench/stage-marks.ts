/**
 * Marks the stages of boxwatch's poll cycle in the floor bench's `--marks` output, for
 * bench/gc-trace.ts to count what each stage allocates: a line `stage <name>` (through `mark`,
 * which adds the heap in use) when the cycle enters the stage. The client's device list (`list`:
 * request, JSON.parse, validation), the poller's own work (`poller`: the known boxes, the details
 * due, then the snapshots and the missing boxes), the details requests (`details`), the history
 * writer (`writer`), the alert pipeline (`alerts`), the rest of the store's commit (`commit`), the
 * app's work after it (`after`). The store's, the writer's and the pipeline's methods are wrapped
 * on their prototypes (once per process); the client's through the object the app is given.
 */
import { AlertPipeline } from '../src/alerts/pipeline.js';
import type { GatewayClient } from '../src/gateway/types.js';
import { SqliteStore } from '../src/store/sqlite/store.js';
import { SqliteHistoryWriter } from '../src/store/sqlite/writer.js';

/** `method` of `proto` wrapped: `before` marked on entry, `after` on return. */
function wrap<T extends object, K extends keyof T>(proto: T, method: K, mark: (text: string) => void, before: string, after: string): void {
  const original = proto[method] as (...args: unknown[]) => unknown;
  proto[method] = function (this: unknown, ...args: unknown[]) {
    mark(`stage ${before}`);
    try {
      return original.apply(this, args);
    } finally {
      mark(`stage ${after}`);
    }
  } as T[K];
}

/** Wraps the stages' methods, and returns `client` with its requests marked. */
export function markStages(client: GatewayClient, mark: (text: string) => void): GatewayClient {
  wrap(SqliteStore.prototype, 'commitCycle', mark, 'commit', 'after');
  wrap(SqliteHistoryWriter.prototype, 'record', mark, 'writer', 'commit');
  wrap(AlertPipeline.prototype, 'decide', mark, 'alerts', 'commit');
  let inFlight = 0;
  return {
    ...client,
    listDevices: async (options) => {
      mark('stage list');
      try {
        return await client.listDevices(options);
      } finally {
        mark('stage poller');
      }
    },
    getDevice: async (serial, options) => {
      if (inFlight++ === 0) mark('stage details');
      try {
        return await client.getDevice(serial, options);
      } finally {
        if (--inFlight === 0) mark('stage poller');
      }
    },
  };
}
