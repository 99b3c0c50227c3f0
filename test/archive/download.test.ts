/**
 * One recording download (src/archive/download.ts) against a scripted local HTTP server: the
 * timeout is for the headers and for each pause in the body (not for the whole download), a body
 * over archive.max_size is cut as it arrives, an abort stops the read with its reason, and a
 * redirect is followed with the recording URL's query kept out of errors. With one connection to
 * the host, nothing holds it: a body let go unread (`close`: the archive's file could not be
 * created), an error answer or a redirect whose body trickles for ever; the next download gets it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DownloadError, downloadAgent, openRecording, type DownloadOptions } from '../../src/archive/download.js';
import { Throttle } from '../../src/archive/throttle.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { caught } from '../gateway/leak.js';

let server: Server | undefined;
let agent = downloadAgent(2);
afterEach(async () => {
  await agent.destroy();
  agent = downloadAgent(2);
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const options = (overrides: Partial<DownloadOptions> = {}): DownloadOptions => ({
  agent,
  allowHosts: [],
  maxBytes: 1 << 20,
  timeoutMs: 1_000,
  throttle: new Throttle(undefined, new FakeClock()),
  ...overrides,
});

async function readAll(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of body) n += chunk.length;
  return n;
}

describe('a recording download', () => {
  it('fails as a network error when the headers do not come within the timeout', async () => {
    const base = await serve(() => undefined);
    const err = await caught(() => openRecording(`${base}/r.wav?token=abc`, options({ timeoutMs: 200 })));
    expect(err).toMatchObject({ code: 'network', retryable: true });
    expect((err as Error).message).toBe(`downloading from ${new URL(base).host} failed: HEADERS_TIMEOUT`);
  });

  it('fails when the body stops for longer than the timeout', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.write(Buffer.alloc(1000));
    });
    const opened = await openRecording(`${base}/r.wav`, options({ timeoutMs: 300 }));
    const err = await caught(() => readAll(opened.body));
    expect(err).toMatchObject({ code: 'network', message: expect.stringMatching(/BODY_TIMEOUT$/) });
  });

  it('reads a body that comes in pauses shorter than the timeout, however long it takes in all', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      let sent = 0;
      const drip = setInterval(() => {
        res.write(Buffer.alloc(100));
        if ((sent += 1) === 10) {
          clearInterval(drip);
          res.end();
        }
      }, 150);
    });
    const opened = await openRecording(`${base}/r.wav`, options({ timeoutMs: 1_000 }));
    expect(await readAll(opened.body)).toBe(1000); // 1.5 s in all, never 1 s without a byte
  });

  it('cuts a body without Content-Length once it passes archive.max_size', async () => {
    let written = 0;
    let closed = false;
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.on('close', () => (closed = true));
      const chunk = Buffer.alloc(64 * 1024);
      const pump = (): void => {
        while (!res.destroyed && written < 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    });
    const opened = await openRecording(`${base}/r.wav`, options({ maxBytes: 256 * 1024 }));
    const err = await caught(() => readAll(opened.body));
    expect(err).toMatchObject({ code: 'too_large', message: 'the recording is larger than archive.max_size (262144 bytes)' });
    await expect.poll(() => closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('stops reading with the signal\'s reason when aborted', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.write(Buffer.alloc(1000));
    });
    const controller = new AbortController();
    const opened = await openRecording(`${base}/r.wav`, options({ signal: controller.signal, timeoutMs: 10_000 }));
    const reading = caught(() => readAll(opened.body));
    setTimeout(() => controller.abort(new Error('stopping')), 50);
    expect(await reading).toEqual(new Error('stopping'));
  });

  it('follows a redirect on the same host and reports where the body came from', async () => {
    const base = await serve((req, res) => {
      if (req.url?.startsWith('/old')) {
        res.writeHead(302, { location: '/new/r.mp3?token=secret-token' });
        res.end('moved');
      } else {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 3 });
        res.end('abc');
      }
    });
    const opened = await openRecording(`${base}/old/r.mp3?token=secret-token`, options());
    expect(opened.url.pathname).toBe('/new/r.mp3');
    expect(opened.contentType).toBe('audio/mpeg');
    expect(await readAll(opened.body)).toBe(3);
  });

  it('a request undici refuses to make fails as a DownloadError naming only the host, not retried, and the next download goes ahead', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 3 });
      res.end('abc');
    });
    // A raw library error would be recorded by the archive as an `internal` failure.
    const err = await caught(() => openRecording(`${base}/r.wav?token=secret-token`, options({ timeoutMs: -1 })));
    expect(err).toBeInstanceOf(DownloadError);
    expect(err).toMatchObject({ code: 'network', retryable: false, message: `downloading from ${new URL(base).host} failed: UND_ERR_INVALID_ARG` });
    const opened = await openRecording(`${base}/r.wav?token=secret-token`, options());
    expect(await readAll(opened.body)).toBe(3);
  });

  describe('with one connection to the host, nothing holds it', () => {
    let one = downloadAgent(1);
    const timers: NodeJS.Timeout[] = [];
    afterEach(() => {
      for (const t of timers.splice(0)) clearInterval(t);
      void one.destroy();
      one = downloadAgent(1);
    });
    /** A body that never ends: a byte every 50 ms. */
    const trickle = (res: ServerResponse): void => void timers.push(setInterval(() => res.write('.'), 50));
    const RECORDING = Buffer.alloc(8 * 1024 * 1024, 7); // more than the socket buffers hold

    it('a recording let go before its body was read (its file could not be created) gives its connection back', async () => {
      let requests = 0;
      const base = await serve((_req, res) => {
        requests += 1;
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': RECORDING.length });
        res.end(RECORDING);
      });
      const first = await openRecording(`${base}/1.wav`, options({ agent: one, maxBytes: 64 << 20 }));
      first.close();
      const second = await openRecording(`${base}/2.wav`, options({ agent: one, maxBytes: 64 << 20 }));
      expect(await readAll(second.body)).toBe(RECORDING.length);
      expect(requests).toBe(2);
    });

    it('an error answer whose body trickles for ever fails at once, and the next download gets the connection', async () => {
      const base = await serve((req, res) => {
        if (req.url?.startsWith('/bad')) {
          res.writeHead(503, { 'content-type': 'text/html' }); // a proxy's error page that never ends
          trickle(res);
        } else res.end('RIFF');
      });
      const err = await caught(() => openRecording(`${base}/bad.wav`, options({ agent: one })));
      expect(err).toMatchObject({ code: 'http_503', retryable: true });
      const next = await openRecording(`${base}/good.wav`, options({ agent: one }));
      expect(await readAll(next.body)).toBe(4);
    });

    it('a redirect whose body trickles for ever is followed on the same host', async () => {
      const base = await serve((req, res) => {
        if (req.url?.startsWith('/old')) {
          res.writeHead(302, { location: '/new/r.wav' });
          trickle(res);
        } else res.end('RIFF');
      });
      const opened = await openRecording(`${base}/old/r.wav`, options({ agent: one }));
      expect(opened.url.pathname).toBe('/new/r.wav');
      expect(await readAll(opened.body)).toBe(4);
    });
  });
});
