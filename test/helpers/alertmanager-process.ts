/**
 * A real Alertmanager (Debian's prometheus-alertmanager) for tests: started on a free port with a
 * temporary configuration and storage directory, clustering off, its own webhook receiver pointed
 * at a URL the test chooses. `ALERTMANAGER_BIN` overrides the binary; `available()` says whether
 * it exists (tests skip with a message when it does not).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './wait.js';

export const ALERTMANAGER_BIN = process.env.ALERTMANAGER_BIN ?? '/usr/bin/prometheus-alertmanager';

export function alertmanagerAvailable(): boolean {
  return existsSync(ALERTMANAGER_BIN);
}

export interface RunningAlertmanager {
  url: string;
  output: string[];
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts Alertmanager; its only receiver posts webhooks (send_resolved) to `webhookUrl`. */
export async function startAlertmanager(webhookUrl: string): Promise<RunningAlertmanager> {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-am-'));
  const config = join(dir, 'alertmanager.yml');
  writeFileSync(
    config,
    [
      'route:',
      '  receiver: hook',
      '  group_by: [alertname, serial]',
      '  group_wait: 0s',
      '  group_interval: 1s',
      '  repeat_interval: 1h',
      'receivers:',
      '  - name: hook',
      '    webhook_configs:',
      `      - url: ${JSON.stringify(webhookUrl)}`,
      '        send_resolved: true',
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const child: ChildProcess = spawn(
    ALERTMANAGER_BIN,
    [`--config.file=${config}`, `--storage.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address=', '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  child.stdout?.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => output.push(c.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready, or exited: either ends the wait.
  const settled = async (): Promise<'ready' | 'exited' | false> => {
    if (child.exitCode !== null) return 'exited';
    return (await fetch(`${url}/-/ready`).catch(() => null))?.ok === true && 'ready'; // not listening yet: null
  };
  const state = await until('Alertmanager to become ready', settled, { timeoutMs: 20_000, everyMs: 100 }).catch(() => 'timed out');
  if (state !== 'ready') {
    await stop();
    throw new Error(`Alertmanager did not become ready (${state}):\n${output.join('')}`);
  }
  return { url, output, stop };
}
