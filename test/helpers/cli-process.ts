/**
 * The BUILT `boxwatch` (dist/src/main.js) as a child process, the way an operator runs it: its
 * stdout, stderr and exit code. The environment is only PATH and HOME plus what the test passes,
 * so that nothing of the test runner's shell (BOXWATCH_*, NO_COLOR, SMTP_URL) leaks in.
 * Call `ensureBuilt()` (test/e2e/build.ts) in beforeAll.
 */
import { spawn } from 'node:child_process';
import { MAIN } from '../e2e/build.js';
import type { CliRun } from './cli.js';

export interface ProcessRunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The process is killed (and the promise rejects) after this long; default 20 s. */
  timeoutMs?: number;
  /** The executable; default `node dist/src/main.js`. */
  command?: string[];
}

/** The environment a child starts from: PATH and HOME only. */
export function baseEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME };
}

export function runBuilt(argv: string[], options: ProcessRunOptions = {}): Promise<CliRun> {
  const [file, ...prefix] = options.command ?? [process.execPath, MAIN];
  return new Promise((resolve, reject) => {
    const child = spawn(file as string, [...prefix, ...argv], {
      cwd: options.cwd,
      env: { ...baseEnv(), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`boxwatch ${argv.join(' ')} still running after ${options.timeoutMs ?? 20_000} ms\nstdout: ${out}\nstderr: ${err}`));
    }, options.timeoutMs ?? 20_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out, err });
    });
  });
}
