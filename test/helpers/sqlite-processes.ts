/**
 * Other processes on one SQLite file: `openAtOnce`, several opening the store at the same instant
 * (replicas started together, a supervisor starting `run` next to a CLI command), and
 * `lockFromAnotherProcess`, one holding its write lock for a while.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../e2e/build.js';

export interface OpenAtOnceOptions {
  /** How many processes; default 8. */
  processes?: number;
  /** Passed to openStore (a copy of the migrations folder with more files: an upgrade). */
  migrationsDir?: string;
  /** Each child's file size limit (`ulimit -f`, KiB): writes beyond it fail as on a full disk. */
  fileSizeLimitKiB?: number;
}

/**
 * Each child loads the BUILT store module (dist/) first and opens the file only when every child is
 * ready, so the opens really overlap (a bare `node -e` each would mostly run one after another).
 * Call `ensureBuilt()` (test/e2e/build.ts) in beforeAll.
 * Each process's outcome, in order: 'ok' when it opened and closed the store, else its exit code and stderr. */
export async function openAtOnce(file: string, options: OpenAtOnceOptions = {}): Promise<string[]> {
  const storeModule = pathToFileURL(join(ROOT, 'dist/src/store/index.js')).href;
  const code = [
    `const { openStore } = await import(${JSON.stringify(storeModule)});`,
    'const [file, migrationsDir] = process.argv.slice(1);',
    "process.stdin.once('data', () => {",
    '  try { openStore(file, { migrationsDir: migrationsDir || undefined }).close(); process.exit(0); }',
    "  catch (err) { process.stderr.write(String(err.code) + ' ' + err.message); process.exit(1); }",
    '});',
    "process.stdout.write('ready');",
  ].join('\n');
  const args = ['--input-type=module', '-e', code, file, options.migrationsDir ?? ''];
  const [command, argv] = options.fileSizeLimitKiB === undefined
    ? [process.execPath, args]
    : ['/bin/sh', ['-c', `ulimit -f ${options.fileSizeLimitKiB} && exec "$@"`, 'sh', process.execPath, ...args]];
  const children = Array.from({ length: options.processes ?? 8 }, () => {
    const child = spawn(command, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exit = new Promise<string>((resolve) => child.on('exit', (status) => resolve(status === 0 ? 'ok' : `exit ${String(status)}: ${stderr}`)));
    const ready = new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    return { child, ready: Promise.race([ready, exit]), exit };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.child.stdin.end('go\n');
  return Promise.all(children.map((c) => c.exit));
}

const SQLITE_MODULE = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Another process opens (creating it if need be) `dbPath`, takes its write lock with `BEGIN <mode>`
 * and releases it (rolling back) after `holdMs` real milliseconds; resolves once the lock is taken,
 * with a promise of the process's exit and a way to kill it (for the test's cleanup).
 */
export async function lockFromAnotherProcess(dbPath: string, holdMs: number, mode: 'IMMEDIATE' | 'EXCLUSIVE' = 'EXCLUSIVE'): Promise<{ exited: Promise<number | null>; kill: () => void }> {
  const script = `
    const Database = require(${JSON.stringify(SQLITE_MODULE)});
    const db = new Database(${JSON.stringify(dbPath)});
    db.exec('BEGIN ${mode}');
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${holdMs});
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('locked')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`lock holder exited early (${code})`)));
  });
  return { exited, kill: () => child.kill('SIGKILL') };
}
