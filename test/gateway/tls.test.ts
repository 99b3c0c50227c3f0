/**
 * An https:// gateway: the client speaks TLS and verifies the gateway's certificate. A local
 * HTTPS server with a certificate made by openssl for this run: untrusted, the client refuses it
 * (no request is sent, the key stays out of the error); trusted through NODE_EXTRA_CA_CERTS, the
 * built `boxwatch calls list` reads the gateway over TLS with the key header.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayClient } from '../../src/gateway/client.js';
import { GatewayError } from '../../src/gateway/errors.js';
import type { IncomingHttpHeaders } from 'node:http';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { caught, deepText } from './leak.js';
import { json } from './local-server.js';

const KEY = 'sk-tls-5e1f0a9c-SECRET';

let dir: string;
let server: Server;
let port: number;
const seen: { url: string | undefined; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-tls-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    seen.push({ url: req.url, headers: req.headers });
    const call = { call_id: '7', status: 'completed', direction: 'outbound', agent_id: 1, from: 'box:SN-0001', to: '+14155550123', started_at: '2026-03-01T11:00:00Z' };
    json(res, 200, { status: 'success', data: [call], meta: { per_page: 20, page: 1, has_next: false } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  await ensureBuilt();
}, 60_000);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('an https gateway', () => {
  it('whose certificate is not trusted is refused before any request, without the key in the error', async () => {
    const client = createGatewayClient({ baseUrl: `https://localhost:${port}`, secretKey: KEY, retries: 0 });
    try {
      const err = await caught(() => client.listCalls());
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ code: 'unavailable', endpoint: 'call_list' });
      expect((err as GatewayError).message).toMatch(/self-signed certificate/);
      expect(deepText(err)).not.toContain(KEY);
      expect(seen).toHaveLength(0);
    } finally {
      await client.close();
    }
  });

  it('whose certificate is trusted is read over TLS with the key header (the built CLI)', async () => {
    const run = await runBuilt(['calls', 'list', '--format', 'json'], {
      env: { BOXWATCH_GATEWAY_URL: `https://localhost:${port}`, BOXWATCH_SECRET_KEY: KEY, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
    });
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect((JSON.parse(run.out) as { call_id: string }[]).map((c) => c.call_id)).toEqual(['7']);
    expect(seen.at(-1)?.url).toBe('/api/gateway/v1/call/list?page=1');
    expect(seen.at(-1)?.headers['account-secret-key']).toBe(KEY);
  }, 30_000);
});
