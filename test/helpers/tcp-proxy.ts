/**
 * A TCP proxy for tests that cuts a process off from a server (the partition tests of
 * docs/operations.md, "Running replicas"): it listens on 127.0.0.1 and forwards every connection
 * to `target`. `cut('reset')` closes every connection and refuses new ones (the server seems
 * gone); `cut('blackhole')` keeps the connections open but forwards nothing more and leaves new
 * ones unanswered (packets dropped by the network: calls hang; a side closing its end goes unseen
 * by the other). `heal()` forwards again (new connections only; the cut ones are closed, as a
 * real partition's are once packets flow again).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(mode: 'reset' | 'blackhole'): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let state: 'open' | 'reset' | 'blackhole' = 'open';
  const pairs = new Set<[Socket, Socket]>();
  const held = new Set<Socket>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (state === 'reset') {
      client.destroy();
      return;
    }
    if (state === 'blackhole') {
      held.add(client); // accepted, never answered
      return;
    }
    const upstream = connect(target.port, target.host);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (state === 'open' && pairs.has(pair)) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = (closed: Socket): void => {
      if (!pairs.has(pair) && state === 'blackhole') {
        // Cut off: not even a close gets through (the server ending a session goes unseen by the
        // client, and the reverse); the other side learns of it at the heal.
        held.add(closed === client ? upstream : client);
        return;
      }
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => end(client));
    upstream.on('close', () => end(upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    cut(mode) {
      state = mode;
      for (const pair of [...pairs]) {
        pairs.delete(pair); // nothing more is forwarded on these connections
        if (mode === 'reset') for (const s of pair) s.destroy();
      }
    },
    heal() {
      state = 'open';
      for (const s of held) s.destroy();
      held.clear();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
