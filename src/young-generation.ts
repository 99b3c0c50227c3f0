/**
 * V8's young generation in the daemon's first seconds.
 *
 * V8 allocates new objects in its young generation: two semi-spaces of 1 MiB at the start, doubled
 * (up to 16 MiB each) whenever the bytes that survived its collections since the last doubling
 * exceed their size. Loading boxwatch's modules and opening the app leave them at 8 MiB and most of
 * the way to the next doubling, until V8's memory reducer shrinks them, 8 to 17 s after the start.
 * A first poll cycle before then doubled them to 16 MiB just as it allocated the most it ever does
 * (every box's details, on a new database or after a long downtime): at 1,000 boxes, RSS went from
 * about 80 to 100-107 MiB for some 8 s (BENCHMARKS.md, "Eleventh pass" and "Twelfth pass").
 *
 * So the executable holds the young generation at its first size from before it loads its modules:
 * for the first 30 s of `boxwatch run` (past the reducer's first collection, whatever the schedule,
 * the accounts led and the outcome of the first cycles), and for every other command only until
 * they are loaded. After that V8 grows it as it would have: the steady cycles of a large fleet run
 * on the young generation V8 grows for them. What the hold can cost is CPU, and only in those 30 s:
 * more, smaller collections (the first cycle at 10,000 boxes: within the spread of runs without it).
 *
 * The hold is V8's growth factor set to 1, with `v8.setFlagsFromString`. V8 reads the factor each
 * time it grows the semi-spaces, and takes 1 only at run time: given at start, V8 raises it to its
 * minimum, 2 (and Node's documentation of `v8.setFlagsFromString` warns that flags changed after
 * the start may behave unpredictably). So test/young-generation.test.ts checks, on the Node that
 * runs the tests, that the hold holds and that the release lets the young generation grow again.
 * Should a later V8 refuse 1 at run time, the hold does nothing and the daemon peaks as it did
 * without it. Measured on Node 20.
 */
import { setFlagsFromString } from 'node:v8';

/** How long `boxwatch run` holds it after its start: past V8's first memory-reducing collection. */
export const DAEMON_HOLD_MS = 30_000;

/** V8's default growth factor of the semi-spaces (`node --v8-options`). */
const V8_DEFAULT_GROWTH_FACTOR = 2;

/** Keeps the young generation at the size it has now. */
export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Lets V8 grow the young generation again, by its default factor. */
export function releaseYoungGeneration(): void {
  setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
}

/**
 * Once the executable has loaded the command `command` (its first word): `boxwatch run` keeps the
 * hold for `holdMs` more (DAEMON_HOLD_MS; tests pass a shorter one), any other command lets go now.
 */
export function releaseAfterStart(command: string | undefined, holdMs = DAEMON_HOLD_MS): void {
  if (command !== 'run') releaseYoungGeneration();
  else setTimeout(releaseYoungGeneration, holdMs).unref();
}
