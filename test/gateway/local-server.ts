/**
 * A tiny scripted HTTP server on 127.0.0.1 (port 0) for client fault tests: each request is
 * answered by the handler with its 0-based index; the server records requests and counts sockets.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

export interface LocalServer {
  url: string;
  requests: RecordedRequest[];
  /** TCP connections accepted so far. */
  sockets(): number;
  /** The most TCP connections that were open at the same time. */
  maxOpen(): number;
  /** TCP connections open now. */
  openNow(): number;
  close(): Promise<void>;
}

/**
 * `keepAliveTimeoutMs`: how long the server keeps an idle connection open itself (Node's default
 * 5 s; 0: for ever, so that only the client closes it).
 */
export async function startLocalServer(handler: Handler, options: { keepAliveTimeoutMs?: number } = {}): Promise<LocalServer> {
  const requests: RecordedRequest[] = [];
  const open = new Set<Socket>();
  let sockets = 0;
  let maxOpen = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const index = requests.length;
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(req, res, index);
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    sockets += 1;
    open.add(socket);
    maxOpen = Math.max(maxOpen, open.size);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sockets: () => sockets,
    maxOpen: () => maxOpen,
    openNow: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Writes a JSON response. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export const DEVICE_SUMMARY = {
  id: 1,
  serial_no: 'SN-0001',
  device_name: 'Front desk',
  connected: true,
  battery_level: 80,
  last_seen: '2026-01-01T00:00:00Z',
  firmware_version: '2.10.0',
};

/** `{status:'success', data:[DEVICE_SUMMARY]}` */
export function deviceList(res: ServerResponse, headers: Record<string, string> = {}): void {
  json(res, 200, { status: 'success', data: [DEVICE_SUMMARY] }, headers);
}
