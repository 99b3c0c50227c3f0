/**
 * A small reader of the Prometheus text exposition format for assertions: samples with their
 * labels unescaped (\\ \" \n), and the TYPE of each metric family.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

export function parsePromText(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unparseable sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    let consumed = 0;
    for (let l = LABEL.exec(body); l !== null; l = LABEL.exec(body)) {
      labels[l[1] as string] = unescape(l[2] as string);
      consumed = LABEL.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`unparseable labels: ${JSON.stringify(body)}`);
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** Samples of one metric as `serial -> value` (for per-box gauges). */
export function bySerial(samples: Sample[], name: string): Record<string, number> {
  return Object.fromEntries(samples.filter((s) => s.name === name).map((s) => [s.labels.serial as string, s.value]));
}
