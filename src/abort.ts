/**
 * Aborting one request when a longer-lived signal (a cycle's, the daemon's) aborts.
 *
 * Not AbortSignal.any: on Node 20 it keeps a reference to every signal it makes in each source
 * signal (in the sources of a signal it made, too) and never removes it, so a daemon-long signal
 * joined once per request grows for as long as the daemon runs.
 */

/** Aborts `target` with `source`'s reason when `source` aborts; returns what stops that (call it once the request ended). */
export function abortWith(source: AbortSignal | undefined, target: AbortController): () => void {
  if (source === undefined) return () => undefined;
  if (source.aborted) {
    target.abort(source.reason);
    return () => undefined;
  }
  const forward = (): void => target.abort(source.reason);
  source.addEventListener('abort', forward, { once: true });
  return () => source.removeEventListener('abort', forward);
}
