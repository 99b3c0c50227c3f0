/**
 * `boxwatch run` as a real child process (the built dist/src/main.js), for tests that kill -9 or
 * signal it. Collects its output for failure messages; killAll() in afterAll.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { MAIN, ROOT } from '../e2e/build.js';
import { until } from './wait.js';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class DaemonProcesses {
  /** Everything the daemons printed, in order. */
  readonly output: string[] = [];
  private readonly children = new Set<ChildProcess>();

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  spawn(configPath: string): ChildProcess {
    const child = spawn(process.execPath, [MAIN, 'run', '--config', configPath], {
      cwd: ROOT,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.children.add(child);
    child.stdout?.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.stderr?.on('data', (c: Buffer) => this.output.push(c.toString()));
    child.on('exit', () => this.children.delete(child));
    return child;
  }

  /** Resolves with how the child ended; rejects if it is still running after `timeoutMs` (a bound for a loaded machine). */
  async exited(child: ChildProcess, timeoutMs = 30_000): Promise<ExitStatus> {
    if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode };
    const timer = setTimeout(() => child.emit('error', new Error(`still running after ${timeoutMs} ms\n${this.tail()}`)), timeoutMs);
    try {
      const [code, signal] = (await Promise.race([once(child, 'exit'), once(child, 'error').then(([err]) => Promise.reject(err as Error))])) as [
        number | null,
        NodeJS.Signals | null,
      ];
      return { code, signal };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until `check` holds (rejects after `timeoutMs`, with the daemons' output; the default is generous for a loaded machine: a condition that holds sooner ends the wait sooner). */
  async until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    await until(what, check, { timeoutMs, everyMs: 50, detail: () => this.tail() });
  }

  killAll(): void {
    for (const child of this.children) child.kill('SIGKILL');
  }

  private tail(): string {
    return this.output.join('').slice(-3000);
  }
}
