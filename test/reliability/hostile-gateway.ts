/**
 * A hostile gateway for reliability tests: a local HTTP server in front of the simulator that
 * forwards every request and lets a test replace or rewrite the answers of one endpoint (an endless
 * body, a record out of range, a Date header in 2100, details that never come back).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Upstream {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Handles one request: write to `res` yourself (return true), or return false to pass the
 * simulator's answer through. `upstream()` asks the simulator.
 */
export type Interceptor = (req: IncomingMessage, res: ServerResponse, upstream: () => Promise<Upstream>) => Promise<boolean> | boolean;

export interface HostileGateway {
  url: string;
  /** The simulator's URL (set once it runs). */
  target: string;
  intercept: Interceptor | null;
  /** Requests received, by path. */
  hits(path: RegExp): number;
  close(): Promise<void>;
}

export async function startHostileGateway(): Promise<HostileGateway> {
  const paths: string[] = [];
  const sockets = new Set<Socket>();
  const gw: HostileGateway = {
    url: '',
    target: '',
    intercept: null,
    hits: (re) => paths.filter((p) => re.test(p)).length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const upstreamOf = (req: IncomingMessage) => async (): Promise<Upstream> => {
    const res = await fetch(`${gw.target}${req.url ?? '/'}`, {
      method: req.method,
      headers: { 'account-secret-key': String(req.headers['account-secret-key'] ?? ''), accept: 'application/json' },
    });
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (k === 'date' || k === 'content-type' || k === 'retry-after') headers[k] = v;
    });
    return { status: res.status, headers, body: await res.text() };
  };
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    const upstream = upstreamOf(req);
    void (async () => {
      try {
        if (gw.intercept !== null && (await gw.intercept(req, res, upstream))) return;
        const u = await upstream();
        res.writeHead(u.status, { ...u.headers, 'content-length': Buffer.byteLength(u.body) });
        res.end(u.body);
      } catch {
        res.destroy();
      }
    })();
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  gw.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return gw;
}

/** Answers with the simulator's JSON after `rewrite` changed it (status and Date kept). */
export async function rewriteJson(res: ServerResponse, upstream: () => Promise<Upstream>, rewrite: (body: { data: unknown }) => void, headers: Record<string, string> = {}): Promise<true> {
  const u = await upstream();
  const body = JSON.parse(u.body) as { data: unknown };
  rewrite(body);
  const text = JSON.stringify(body);
  res.writeHead(u.status, { ...u.headers, ...headers, 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return true;
}
