/**
 * `boxwatch export`: the stored history as text, streamed box by box so that memory stays flat
 * whatever the fleet and the range (one box's runs of one metric at a time, written through a
 * sink that waits for slow readers).
 *
 * - csv and jsonl: one line per run of equal values, the columns of `points()` in `boxwatch sql`:
 *   serial, metric, t, until (ms since the epoch, the value held over [t, until)), time (t as
 *   ISO), value. Ordered by box, then metric, then time.
 * - openmetrics: what Prometheus would have scraped from the daemon's /metrics: one sample per
 *   successful poll cycle that covered the box, on the same series (boxwatch_box_battery_percent
 *   {serial, name}, ...), firmware as the info metric boxwatch_box_firmware_info{version}. Grouped
 *   by metric family, then box (each series contiguous, in time order), ending with `# EOF`:
 *   the input of `promtool tsdb create-blocks-from openmetrics`.
 */
import { BOX_GAUGES, promLabelValue as labelValue } from '../metrics.js';
import { matchesGlob } from '../glob.js';
import type { SqliteStore } from '../store/index.js';
import type { Metric } from '../domain/store.js';
import { boxRunBatches, boxRuns, type ExportFormat, type Run, type Span } from './points.js';
import { isoTime as iso } from '../time-format.js';
import type { Sink } from './sink.js';


export interface ExportRequest {
  span: Span;
  /** Serial glob (src/glob.ts). */
  boxes: string;
  metrics: readonly Metric[];
  format: ExportFormat;
}

export interface ExportOptions {
  signal?: AbortSignal;
  /** Called after each box (of each metric family, for openmetrics) with the boxes done and to do. */
  onProgress?: (done: number, total: number) => void;
}

export interface ExportSummary {
  boxes: number;
  /** Lines written (runs for csv/jsonl, samples for openmetrics). */
  lines: number;
}

interface BoxRow {
  serial: string;
  name: string;
  account: string;
}

export async function exportHistory(store: SqliteStore, req: ExportRequest, sink: Sink, options: ExportOptions = {}): Promise<ExportSummary> {
  const boxes: BoxRow[] = store.boxes().filter((b) => matchesGlob(b.serial, req.boxes));
  const progress = options.onProgress ?? ((): void => undefined);
  let lines = 0;
  if (req.format === 'openmetrics') {
    // A box was polled by its account's cycles only.
    const pollsOf = new Map<string, Float64Array>();
    const total = boxes.length * req.metrics.length;
    let done = 0;
    for (const metric of req.metrics) {
      const family = FAMILIES[metric];
      await sink.write(`# TYPE ${family.name} ${family.type}\n# HELP ${family.name} ${family.help}\n`);
      for (const box of boxes) {
        options.signal?.throwIfAborted();
        for (const run of boxRuns(store, box.serial, metric, req.span)) {
          let polls = pollsOf.get(box.account);
          if (polls === undefined) pollsOf.set(box.account, (polls = okCycleTimes(store, req.span, box.account)));
          lines += await writeSamples(sink, family, box, run, polls);
        }
        progress(++done, total);
      }
    }
    await sink.write('# EOF\n');
  } else {
    if (req.format === 'csv') await sink.write('serial,metric,t,until,time,value\n');
    const line = req.format === 'csv' ? csvLine : jsonLine;
    let done = 0;
    for (const box of boxes) {
      options.signal?.throwIfAborted();
      for (const metric of req.metrics) {
        for (const runs of boxRunBatches(store, box.serial, metric, req.span)) {
          await sink.write(runs.map((run) => line(box.serial, metric, run)).join(''));
          lines += runs.length;
        }
      }
      progress(++done, boxes.length);
    }
  }
  await sink.flush();
  return { boxes: boxes.length, lines };
}

function csvLine(serial: string, metric: Metric, r: Run): string {
  const value = r.value === null ? '' : typeof r.value === 'string' ? csvText(r.value) : String(r.value);
  return `${csvText(serial)},${metric},${r.t},${r.until},${iso(r.t)},${value}\n`;
}

/** RFC 4180 quoting; a line break inside a field stays inside the quotes. */
function csvText(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function jsonLine(serial: string, metric: Metric, r: Run): string {
  return JSON.stringify({ serial, metric, t: r.t, until: r.until, time: iso(r.t), value: r.value }) + '\n';
}

// ---- OpenMetrics ----

interface Family {
  name: string;
  type: 'gauge' | 'info';
  help: string;
  /** The sample name (an info family's samples end in _info). */
  sample: string;
}

const gauge = (g: { name: string; help: string }): Family => ({ name: g.name, type: 'gauge', help: g.help, sample: g.name });

const FAMILIES: Record<Metric, Family> = {
  battery: gauge(BOX_GAUGES.battery),
  signal: gauge(BOX_GAUGES.signal),
  connected: gauge(BOX_GAUGES.connected),
  firmware: { name: 'boxwatch_box_firmware', type: 'info', help: 'Firmware version the box reported (label version).', sample: 'boxwatch_box_firmware_info' },
};

/** Start times of the account's successful poll cycles in the span, ascending. */
function okCycleTimes(store: SqliteStore, span: Span, account: string): Float64Array {
  return Float64Array.from(store.okCycleStarts(span.from, span.to, account));
}

/** Index of the first element of the sorted array that is >= t. */
function lowerBound(a: Float64Array, t: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] as number) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Samples written to the sink at once: a run that lasts for months is written in pieces. */
const SAMPLES_PER_WRITE = 1024;

/** One sample per poll within the run, none for a null value (the gateway reported none); how many. */
async function writeSamples(sink: Sink, family: Family, box: BoxRow, run: Run, polls: Float64Array): Promise<number> {
  if (run.value === null) return 0;
  let labels = `serial="${labelValue(box.serial)}",name="${labelValue(box.name)}"`;
  let value = String(run.value);
  if (family.type === 'info') {
    labels += `,version="${labelValue(String(run.value))}"`;
    value = '1';
  }
  const head = `${family.sample}{${labels}} ${value} `;
  let lines = '';
  let count = 0;
  for (let i = lowerBound(polls, run.t); i < polls.length && (polls[i] as number) < run.until; i++) {
    lines += `${head}${(polls[i] as number) / 1000}\n`;
    if (++count % SAMPLES_PER_WRITE === 0) {
      await sink.write(lines);
      lines = '';
    }
  }
  if (lines.length > 0) await sink.write(lines);
  return count;
}
