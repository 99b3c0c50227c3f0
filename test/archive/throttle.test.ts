/**
 * The bandwidth bound (archive.bandwidth): the shared throttle on the fake clock, and a real
 * download through it from a local HTTP server, which does not finish before the clock has
 * moved as long as the bytes take at the rate.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { downloadAgent, openRecording } from '../../src/archive/download.js';
import { Throttle } from '../../src/archive/throttle.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { until } from '../helpers/wait.js';


describe('Throttle', () => {
  it('lets one second of bytes through at once, then paces at the rate', async () => {
    const clock = new FakeClock();
    const throttle = new Throttle(1000, clock);
    await throttle.take(1000); // the first second's worth: no wait
    let done = false;
    const second = throttle.take(500).then(() => (done = true));
    await until('the take to wait on the clock', () => clock.sleeping === 1);
    clock.advance(499);
    expect(clock.sleeping).toBe(1); // still waiting: nothing but the clock can end it
    expect(done).toBe(false);
    clock.advance(1);
    await second;
    expect(done).toBe(true);
  });

  it('does not wait without a bound', async () => {
    const throttle = new Throttle(undefined, new FakeClock());
    await throttle.take(10 ** 12);
  });
});

describe('a download under archive.bandwidth', () => {
  let server: Server | undefined;
  const agent = downloadAgent(1);
  afterEach(async () => {
    await agent.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('takes as long on the clock as its bytes need at the rate', async () => {
    const body = Buffer.alloc(40_000, 7);
    server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': body.length });
      res.end(body);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/r.wav`;
    const clock = new FakeClock();
    const opened = await openRecording(url, { agent, allowHosts: [], maxBytes: 1 << 20, timeoutMs: 5_000, throttle: new Throttle(10_000, clock) });
    let received = 0;
    let finishedAt: number | undefined;
    const reading = (async () => {
      for await (const chunk of opened.body) received += chunk.length;
      finishedAt = clock.now();
    })();
    // 40,000 bytes at 10,000 bytes/s: one second's worth passes at once, the rest takes 3 s of the
    // clock, which moves only while the download waits on it.
    const start = clock.now();
    while (finishedAt === undefined) {
      await until('the download to wait for the throttle, or to end', () => clock.sleeping > 0 || finishedAt !== undefined);
      if (finishedAt === undefined) clock.advance(100);
    }
    await reading;
    expect(received).toBe(body.length);
    expect(finishedAt - start).toBeGreaterThanOrEqual(3_000);
  });
});
