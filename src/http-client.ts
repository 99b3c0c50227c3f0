/**
 * Outgoing HTTP(S) on Node's own client (node:http, node:https): the keep-alive Agent and the
 * start of one request, shared by the gateway client (src/gateway/client.ts) and the recording
 * archive (src/archive/download.ts). Timeouts, aborts and reading the body are the callers'.
 */
import http, { type ClientRequest, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';

/** Where a request goes: the URL's protocol, host (no IPv6 brackets) and port. */
export interface RequestTarget {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: string;
}

/** The target of an http(s) URL (the caller has checked the protocol). */
export function requestTarget(url: URL): RequestTarget {
  return {
    protocol: url.protocol === 'https:' ? 'https:' : 'http:',
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port,
  };
}

/**
 * A keep-alive Agent: at most `maxSockets` connections open at once to each host, idle ones kept
 * for the next request. Node closes an idle one a second before the server's announced
 * `Keep-Alive: timeout=N`, so a request is seldom written on a socket the server is closing.
 */
export function keepAliveAgent(protocol: RequestTarget['protocol'], maxSockets: number): http.Agent {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets };
  return protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
}

export interface RequestInit {
  agent: http.Agent;
  method: 'GET' | 'POST';
  /** Path and query. */
  path: string;
  headers: OutgoingHttpHeaders;
  body?: Buffer;
}

/**
 * Sends a request (with its body, if any) and returns it: the caller listens for `response` and
 * `error`, and cuts it with `req.destroy()` on a timeout or an abort.
 */
export function startRequest(target: RequestTarget, init: RequestInit): ClientRequest {
  const { body, ...options } = init;
  const req = (target.protocol === 'https:' ? https : http).request({ ...target, ...options });
  req.end(body);
  return req;
}
