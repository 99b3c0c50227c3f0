/**
 * How many signals Node keeps a reference to in `signal` on behalf of AbortSignal.any. On Node 20
 * nothing ever removes them, so a daemon-long signal that takes one per request grows for ever.
 */
export function dependantSignals(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = key === undefined ? undefined : ((signal as unknown as Record<symbol, unknown>)[key] as { size?: unknown } | undefined);
  return typeof set?.size === 'number' ? set.size : 0;
}
