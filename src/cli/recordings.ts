/**
 * `boxwatch recordings verify`: checks every file of the recording archive against the SHA-256
 * recorded in the database; one line per missing or mismatched file, and exit 1 when any is bad;
 * one line per other archive directory whose recordings the database lists (not checked here).
 * The archive directory is `--dir`, else the configuration's `archive.dir`.
 */
import { BoxwatchError, UsageError } from '../errors.js';
import { verifyArchive } from '../archive/verify.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, terminalSafe, type OutputFormat } from './output.js';
import type { DataStore } from '../store/index.js';
import type { RecordingsRepo } from '../domain/recordings.js';
import { dbOption, withStore } from './store-access.js';

interface VerifyOptions {
  config?: string;
  db?: string;
  dir?: string;
  format: OutputFormat;
}

export const registerRecordings: RegisterCommand = (program, ctx) => {
  const recordings = program.command('recordings').description('the recording archive');
  recordings
    .command('verify')
    .description('check every archived recording and sidecar against its recorded SHA-256')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .option('--dir <dir>', 'the archive directory (default: archive.dir of the configuration)')
    .addOption(formatOption(['table', 'json']))
    .action((opts: VerifyOptions) => runVerify(opts, ctx));
};

async function runVerify(opts: VerifyOptions, ctx: CliContext): Promise<void> {
  await withStore(opts, ctx, async (store, _now, { config }) => {
    const dir = opts.dir ?? config?.archive?.dir;
    if (dir === undefined) throw new UsageError('no archive directory: give --dir, or a configuration with an archive: section');
    const { archive, recordings, problems, elsewhere } = await verifyArchive(recordingsOf(store), dir);
    if (opts.format === 'json') ctx.out(`${JSON.stringify({ dir, archive, recordings, files: recordings * 2, bad: problems, elsewhere }, null, 2)}\n`);
    else {
      for (const p of problems) ctx.out(`${p.problem === 'missing' ? 'MISSING ' : 'MISMATCH'}  ${terminalSafe(p.path)}  (call ${terminalSafe(p.callId)})\n`);
      ctx.out(`${recordings} recordings (${recordings * 2} files with their sidecars) checked in ${terminalSafe(dir)}: ${problems.length === 0 ? 'all match' : `${problems.length} bad`}\n`);
      for (const e of elsewhere) {
        ctx.out(`ELSEWHERE ${e.recordings} recordings in archive ${terminalSafe(e.archive)}, another directory than this one (${terminalSafe(archive ?? '')}): not checked here (an earlier archive.dir's, or another replica's)\n`);
      }
    }
    if (problems.length > 0) throw new BoxwatchError('archive_damaged', `${problems.length} archived file${problems.length === 1 ? ' is' : 's are'} missing or do not match the recorded SHA-256`);
  });
}

/** The store's recordings; a database from before the archive (schema 9) is said so, not a SQLite error. */
function recordingsOf(store: DataStore): RecordingsRepo {
  try {
    return store.recordings;
  } catch (err) {
    if (/no such table: (recordings|calls)/.test((err as Error).message)) {
      throw new BoxwatchError('archive_none', 'this database has no recording archive (written by a boxwatch without it; the daemon upgrades it when it starts)');
    }
    throw err;
  }
}
