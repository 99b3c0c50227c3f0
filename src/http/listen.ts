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
