/**
 * `npm run bench [-- NAME...]`: runs every bench/*.bench.ts (compiled to dist/bench), or the named
 * ones, one after another in child processes so that each measures its own RSS and CPU. Each bench
 * prints its figures; copy them into BENCHMARKS.md with the machine they ran on.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.bench.js'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();

console.log(`machine: ${os.cpus()[0]?.model ?? 'unknown cpu'} x${os.cpus().length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, ${os.platform()} ${os.release()}`);
if (benches.length === 0) {
  console.error(`no benchmark matches ${wanted.join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const file of benches) {
  console.log(`\n## ${file.replace(/\.bench\.js$/, '')}`);
  const result = spawnSync(process.execPath, ['--expose-gc', join(here, file)], { stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
