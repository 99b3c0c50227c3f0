/**
 * The HTTP listener under abuse (issue: bounds, class 9): a client that sends headers slowly or
 * never finishes its request is cut, and connections beyond `http.max_connections` are closed as
 * they arrive, so that neither slow clients nor a flood exhausts the daemon's file descriptors;
 * /healthz answers again as soon as the flood is gone. Real sockets against the real server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HTTP_LIMITS, startHttpServer, type RunningHttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/domain/store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { parsePromText } from './prom-text.js';

let dir: string;
let store: Store;
let metrics: Metrics;
let server: RunningHttpServer;
const sockets: Socket[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-http-limits-'));
  const clock = new FakeClock(Date.parse('2026-03-01T10:00:00Z'));
  store = openStore(join(dir, 'boxwatch.db'), { clock });
  metrics = createMetrics({ clock, processMetrics: false });
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(limits: Parameters<typeof startHttpServer>[0]['limits']): Promise<{ host: string; port: number }> {
  server = await startHttpServer({ listen: '127.0.0.1:0', store, metrics, clock: new FakeClock(0), health: { maxCycleAgeMs: 1e12 }, logger: silentLogger, limits });
  const url = new URL(server.url);
  return { host: url.hostname, port: Number(url.port) };
}

/** Opens a socket and resolves once connected; records when the server closes it. */
function open(at: { host: string; port: number }): Promise<{ socket: Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(at);
    sockets.push(socket);
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    const closed = new Promise<string>((done) => socket.on('close', () => done(received)));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

describe('HTTP limits', () => {
  it('defaults are documented bounds: headers within 10 s, a request within 30 s, 1,000 connections', () => {
    expect(HTTP_LIMITS).toMatchObject({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 1_000 });
  });

  it('a client that sends its headers slowly and never finishes is answered 408 and disconnected', async () => {
    const at = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 });
    const slow = await open(at);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const timer = setInterval(() => slow.socket.write('X-Drip: 1\r\n'), 50); // never the blank line
    const answer = await slow.closed;
    clearInterval(timer);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('connections beyond the cap are closed as they arrive and counted; once they go, /healthz answers again', async () => {
    const at = await start({ maxConnections: 10 });
    const held = await Promise.all(Array.from({ length: 10 }, () => open(at)));
    const extra = await open(at);
    expect(await extra.closed).toBe(''); // closed without an answer
    const metricsText = await metrics.text();
    expect(parsePromText(metricsText).samples.find((x) => x.name === 'boxwatch_http_connections_dropped_total')?.value).toBe(1);
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.closed));
    // The server notices the closed sockets on its next turn of the event loop.
    await expect.poll(async () => (await fetch(`${server.url}/healthz`).catch(() => null))?.status ?? 0).not.toBe(0);
  });
});
