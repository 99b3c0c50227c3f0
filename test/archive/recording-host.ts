/**
 * A real HTTP server standing for the vendor's recording host (the simulator's recording URLs
 * point at it with `recordingsUrl`): it serves the simulator's recordings through (`proxy`),
 * refuses every connection (`down`: the socket is closed unanswered), or redirects to another
 * URL base (`redirect`). Counts the requests it got.
 */
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordingHost {
  url: string;
  /** Where `proxy` forwards to (the simulator's address), set once it is known. */
  target: string;
  mode: 'proxy' | 'down' | { redirectTo: string };
  requests: number;
  close(): Promise<void>;
}

export async function startRecordingHost(options: { host?: string } = {}): Promise<RecordingHost> {
  const sockets = new Set<Socket>();
  const host: RecordingHost = {
    url: '',
    target: '',
    mode: 'proxy',
    requests: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
  const server: Server = createServer((req, res) => {
    host.requests += 1;
    const mode = host.mode;
    if (mode === 'down') {
      req.socket.destroy();
      return;
    }
    if (mode !== 'proxy') {
      res.writeHead(302, { Location: `${mode.redirectTo}${req.url ?? '/'}` });
      res.end();
      return;
    }
    get(`${host.target}${req.url ?? '/'}`, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('error', () => res.destroy());
      up.on('end', () => {
        const body = Buffer.concat(chunks);
        res.writeHead(up.statusCode ?? 502, { 'Content-Type': up.headers['content-type'] ?? 'application/octet-stream', 'Content-Length': body.length });
        res.end(body);
      });
    }).on('error', () => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const bind = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, bind, resolve));
  host.url = `http://${bind}:${(server.address() as AddressInfo).port}`;
  return host;
}
