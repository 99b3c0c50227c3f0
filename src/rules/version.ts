/**
 * Firmware version comparison: dot-separated numbers compared numerically (2.10.0 > 2.9.3),
 * missing parts count as 0 (2.1 == 2.1.0), a leading `v` is ignored, and a pre-release suffix
 * (`-rc1`) sorts before the release. Text that is not a version sorts by plain string order.
 */

interface Parsed {
  parts: number[];
  pre: string | null;
}

const VERSION = /^v?(\d+(?:\.\d+)*)(?:-([0-9A-Za-z.-]+))?(?:\+.*)?$/;

/** Versions parsed already: a fleet runs a handful of versions, compared for every box each cycle. */
const parsedVersions = new Map<string, Parsed | null>();

function parse(text: string): Parsed | null {
  let parsed = parsedVersions.get(text);
  if (parsed === undefined) {
    const m = VERSION.exec(text.trim());
    parsed = m === null ? null : { parts: (m[1] as string).split('.').map(Number), pre: m[2] ?? null };
    if (parsedVersions.size >= 1000) parsedVersions.clear();
    parsedVersions.set(text, parsed);
  }
  return parsed;
}

/** Negative when a < b, 0 when equal, positive when a > b. */
export function compareVersions(a: string, b: string): number {
  if (a === b) return 0; // the common case: a box on the expected version
  const pa = parse(a);
  const pb = parse(b);
  if (pa === null || pb === null) {
    if (pa !== null) return 1; // a real version sorts after garbage
    if (pb !== null) return -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const n = Math.max(pa.parts.length, pb.parts.length);
  for (let i = 0; i < n; i++) {
    const d = (pa.parts[i] ?? 0) - (pb.parts[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (pa.pre === pb.pre) return 0;
  if (pa.pre === null) return 1;
  if (pb.pre === null) return -1;
  return pa.pre.localeCompare(pb.pre, 'en', { numeric: true }) < 0 ? -1 : 1;
}

/** True when the text parses as a version (digits and dots, optional `v`, pre-release, build). */
export function isVersion(text: string): boolean {
  return parse(text) !== null;
}
