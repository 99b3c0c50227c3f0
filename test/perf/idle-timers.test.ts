/**
 * An idle daemon sleeps: the process metrics must not sample the event loop with a short timer
 * (prom-client's default is 10 ms, which woke the daemon 100 times a second).
 */
import perfHooks from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../src/metrics.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('process metrics', () => {
  it('sample event-loop delay at most once a second, and still report it', async () => {
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay');
    const metrics = createMetrics();
    expect(monitor).toHaveBeenCalled();
    for (const [options] of monitor.mock.calls) expect(options?.resolution).toBeGreaterThanOrEqual(1000);
    const text = await metrics.text();
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds \d/m);
  });
});
