/**
 * The simulator as a child process (`boxwatch sim`, the built dist/src/main.js), so that its CPU is
 * not counted in the benchmark's own process. Shared by the poll and floor benchmarks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export interface SimProcess {
  url: string;
  child: ChildProcess;
  stop(): void;
}

/** Starts `boxwatch sim` on a free port with `devices` boxes (and `extra` arguments) and resolves once it listens. */
export async function startSimProcess(devices: number, key: string, extra: readonly string[] = []): Promise<SimProcess> {
  const child = spawn(process.execPath, [join(here, '..', 'src', 'main.js'), 'sim', '--port', '0', '--devices', String(devices), '--key', key, ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(buffered);
      if (m?.[1]) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
  return { url, child, stop: () => void child.kill('SIGTERM') };
}
