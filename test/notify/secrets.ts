/** Everything an error would show when logged or printed, its whole cause chain included. */
import { inspect } from 'node:util';

export function collectChain(err: unknown): string[] {
  const out: string[] = [inspect(err, { depth: 20, showHidden: true, maxStringLength: null, maxArrayLength: null })];
  for (let e: unknown = err, i = 0; e !== undefined && e !== null && i < 10; i++) {
    if (e instanceof Error) {
      out.push(e.message, e.stack ?? '');
      try {
        out.push(JSON.stringify(e, Object.getOwnPropertyNames(e)));
      } catch {
        // circular: inspect above covers it
      }
      e = e.cause;
    } else {
      out.push(String(e));
      break;
    }
  }
  return out;
}
