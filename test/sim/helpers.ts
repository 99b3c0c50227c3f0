/** Shared set-up for simulator tests: a simulator on 127.0.0.1:0 driven by a FakeClock. */
import { afterEach } from 'vitest';
import { FakeClock } from '../helpers/fake-clock.js';
import { API_PREFIX } from '../../src/gateway/messages.js';
import { startSimulator, type RunningSimulator, type SimServerOptions } from '../../src/sim/server.js';

export const KEY = 'test-account-key';
export const START = '2026-03-01T12:00:00.000Z';

export interface TestSim extends RunningSimulator {
  clock: FakeClock;
  /** GET an API path (below /api/gateway/v1) with the account key unless another is given. */
  get(path: string, key?: string | null): Promise<Response>;
  /** POST make-call as multipart/form-data. */
  makeCall(fields: Record<string, string>, key?: string): Promise<Response>;
}

const running: RunningSimulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** Starts a simulator closed automatically after the test. */
export async function startTestSim(options: SimServerOptions = {}): Promise<TestSim> {
  const clock = new FakeClock(START);
  const defaults = { devices: options.scenario?.devices ?? 20, seed: options.scenario?.seed ?? 7 };
  const sim = await startSimulator({ port: 0, key: KEY, ...defaults, clock, ...options });
  running.push(sim);
  const get = (path: string, key: string | null = KEY): Promise<Response> =>
    fetch(`${sim.url}${API_PREFIX}${path}`, { headers: key === null ? {} : { 'account-secret-key': key }, signal: AbortSignal.timeout(10_000) });
  const makeCall = (fields: Record<string, string>, key: string = KEY): Promise<Response> => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    return fetch(`${sim.url}${API_PREFIX}/call/make-call`, {
      method: 'POST',
      headers: { 'account-secret-key': key },
      body: form,
      signal: AbortSignal.timeout(10_000),
    });
  };
  return Object.assign(sim, { clock, get, makeCall });
}

/** Reads a JSON body as a plain record. */
export async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}
