/**
 * V8's young generation while the daemon starts.
 *
 * V8 allocates new objects in its young generation: two semi-spaces of 1 MiB at the start, doubled
 * (up to 16 MiB each) whenever the bytes that survived its collections since the last doubling
 * exceed their size. Loading boxwatch's modules and opening the app leave them at 8 MiB and most of
 * the way to the next doubling, so a first cycle that came before V8's first memory-reducing
 * collection (8 to 17 s after the start) doubled them to 16 MiB just as it allocated the most it
 * ever does (every box's details, on a new database or after a long downtime). At 1,000 boxes that
 * was RSS past 100 MB for about 8 s (BENCHMARKS.md, "Eleventh pass" and "Twelfth pass").
 *
 * So the executable holds the young generation at its first size (growth factor 1) from before it
 * loads its modules until `boxwatch run`'s first cycle is done, or until any other command starts,
 * and then gives V8 its default factor back: the steady cycles of a large fleet run on the young
 * generation V8 grows for them, as before.
 *
 * V8 reads this flag each time it would grow the semi-spaces. It takes 1 only at run time: given at
 * start, V8 raises it to its minimum, 2. Should a later V8 refuse 1 at run time as well, the hold
 * does nothing and the daemon behaves as it did without it (no error, the start-up peak back).
 */
import { setFlagsFromString } from 'node:v8';

/** V8's default growth factor of the semi-spaces (`node --v8-options`). */
const V8_DEFAULT_GROWTH_FACTOR = 2;

export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

export function releaseYoungGeneration(): void {
  setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
}
