/**
 * Where streamed output goes: text is gathered into chunks of about 64 KB and written to a stream,
 * waiting for it to drain when it is full, so a large export or query result never piles up in
 * memory when the reader (a pipe, a disk) is slower than the writer.
 */
import { once } from 'node:events';

const CHUNK = 64 * 1024;

export interface Sink {
  /** Adds text; resolves once it is buffered or written (await it to respect backpressure). */
  write(text: string): Promise<void>;
  /** Writes whatever is buffered. */
  flush(): Promise<void>;
}

export function streamSink(stream: NodeJS.WritableStream): Sink {
  let buffer = '';
  const push = async (): Promise<void> => {
    const chunk = buffer;
    buffer = '';
    if (chunk.length > 0 && !stream.write(chunk)) await once(stream, 'drain');
  };
  return {
    async write(text) {
      buffer += text;
      if (buffer.length >= CHUNK) await push();
    },
    flush: push,
  };
}

/** A sink over a plain text callback (tests' captured stdout). */
export function callbackSink(out: (text: string) => void): Sink {
  return {
    write(text) {
      out(text);
      return Promise.resolve();
    },
    flush: () => Promise.resolve(),
  };
}
