/** Parses `HOST:PORT` (IPv6 as `[::1]:9464`) as the configuration's `http.listen` writes it. */
import { ConfigError } from '../errors.js';

export interface ListenAddress {
  /** Without brackets; '' means every interface. */
  host: string;
  port: number;
}

const LISTEN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/;

export function parseListen(text: string): ListenAddress {
  const m = LISTEN.exec(text);
  const port = Number(m?.[2]);
  if (!m || port > 65535) throw new ConfigError([{ path: 'http.listen', message: `must be host:port, e.g. 127.0.0.1:9464 (got "${text}")` }]);
  const host = (m[1] as string).replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

/** `http://host:port` for a bound address, brackets around IPv6 hosts. */
export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Why `http.listen` could not be bound, and what to do about it (the `http_listen` error's text). */
export function listenFailure(listen: string, err: NodeJS.ErrnoException): string {
  const where = `cannot listen on ${listen} (http.listen)`;
  switch (err.code) {
    case 'EADDRINUSE':
      return `${where}: another process (another boxwatch?) holds the port; stop it, or set http.listen to a free port (or http: false)`;
    case 'EACCES':
      return `${where}: permission denied (ports below 1024 need privileges); set http.listen to a port above 1023`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return `${where}: this machine has no such address; set http.listen to one of its addresses, e.g. 127.0.0.1:9464`;
    default:
      return `${where}: ${err.code ?? err.message}`;
  }
}
