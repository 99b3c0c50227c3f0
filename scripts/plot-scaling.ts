/**
 * Renders the floor benchmark's JSON (bench/floor.bench.ts) as a log-log plot, written as a plain
 * SVG file (no plotting library, no browser): on the left the CPU of a steady cycle for boxwatch
 * and for the floor against the fleet size, on the right the same per box, where a flat line
 * means the cost per box does not grow with the fleet.
 *
 *   npm run bench:plot [-- --json bench/results/floor.json --out docs/img/scaling.svg]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import type { FloorReport } from '../bench/floor.bench.js';

interface Series {
  label: string;
  color: string;
  dashed?: boolean;
  points: { x: number; y: number }[];
}

interface Panel {
  title: string;
  yLabel: string;
  series: Series[];
}

const W = 460;
const H = 340;
const M = { left: 64, right: 16, top: 40, bottom: 52 };

/** Text for SVG: the machine's CPU name comes from the OS. */
const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

const decadesAround = (values: number[]): [number, number] => {
  const lo = Math.floor(Math.log10(Math.min(...values)));
  const hi = Math.ceil(Math.log10(Math.max(...values)));
  return [lo, hi === lo ? hi + 1 : hi];
};

const tickText = (exp: number): string => {
  const v = 10 ** exp;
  if (v >= 1000) return `${(v / 1000).toLocaleString('en-US')}k`;
  return v >= 1 ? String(v) : String(Number(v.toPrecision(1)));
};

function panelSvg(panel: Panel, dx: number): string {
  const xs = panel.series.flatMap((s) => s.points.map((p) => p.x));
  const ys = panel.series.flatMap((s) => s.points.map((p) => p.y));
  const [x0, x1] = decadesAround(xs);
  const [y0, yTop] = decadesAround(ys);
  const y1 = yTop + 1; // a decade of headroom for the legend
  const px = (x: number): number => dx + M.left + ((Math.log10(x) - x0) / (x1 - x0)) * (W - M.left - M.right);
  const py = (y: number): number => M.top + (1 - (Math.log10(y) - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  const out: string[] = [];
  out.push(`<text x="${dx + W / 2}" y="20" text-anchor="middle" font-weight="bold">${panel.title}</text>`);
  for (let e = x0; e <= x1; e++) {
    const x = px(10 ** e);
    out.push(`<line x1="${x}" y1="${M.top}" x2="${x}" y2="${H - M.bottom}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${H - M.bottom + 16}" text-anchor="middle">${tickText(e)}</text>`);
  }
  for (let e = y0; e <= y1; e++) {
    const y = py(10 ** e);
    out.push(`<line x1="${dx + M.left}" y1="${y}" x2="${dx + W - M.right}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${dx + M.left - 6}" y="${y + 4}" text-anchor="end">${tickText(e)}</text>`);
  }
  out.push(`<rect x="${dx + M.left}" y="${M.top}" width="${W - M.left - M.right}" height="${H - M.top - M.bottom}" fill="none" stroke="#888"/>`);
  out.push(`<text x="${dx + (M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle">boxes (log scale)</text>`);
  out.push(`<text transform="translate(${dx + 16} ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${panel.yLabel}</text>`);
  panel.series.forEach((s, i) => {
    const d = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    for (const p of s.points) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
    const ly = M.top + 16 + i * 16;
    out.push(`<line x1="${dx + M.left + 10}" y1="${ly - 4}" x2="${dx + M.left + 30}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${dx + M.left + 36}" y="${ly}">${s.label}</text>`);
  });
  return out.join('\n');
}

export function scalingSvg(report: FloorReport): string {
  const sizes = [...report.sizes].sort((a, b) => a.boxes - b.boxes);
  const steady = (pick: (r: FloorReport['sizes'][number]) => number, perBox: boolean): { x: number; y: number }[] =>
    sizes.map((r) => ({ x: r.boxes, y: perBox ? (pick(r) * 1000) / r.boxes : pick(r) }));
  const boxwatch = (r: FloorReport['sizes'][number]): number => r.steady.boxwatch.cpuMs;
  const floor = (r: FloorReport['sizes'][number]): number => r.steady.floor.cpuMs;
  const firstWall = (r: FloorReport['sizes'][number]): number => r.first.boxwatch.wallMs;
  const panels: Panel[] = [
    {
      title: 'Poll cycle cost',
      yLabel: 'milliseconds (log scale)',
      series: [
        { label: 'boxwatch, steady cycle, CPU', color: '#1f6feb', points: steady(boxwatch, false) },
        { label: 'floor, steady cycle, CPU', color: '#999', points: steady(floor, false) },
        { label: 'boxwatch, first cycle, wall', color: '#d1242f', dashed: true, points: steady(firstWall, false) },
      ],
    },
    {
      title: 'Steady cycle CPU per box',
      yLabel: 'microseconds per box (log scale)',
      series: [
        { label: 'boxwatch', color: '#1f6feb', points: steady(boxwatch, true) },
        { label: 'floor', color: '#999', points: steady(floor, true) },
      ],
    },
  ];
  const ratios = sizes.map((r) => `${r.boxes.toLocaleString('en-US')}: ${r.steady.ratio.toFixed(2)}x`).join(', ');
  const width = W * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 24}" viewBox="0 0 ${width} ${H + 24}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...panels.map((p, i) => panelSvg(p, i * W)),
    `<text x="${width / 2}" y="${H + 14}" text-anchor="middle" fill="#444">boxwatch / floor, steady CPU: ${ratios} (${esc(`${report.date.slice(0, 10)}, ${report.machine}, concurrency ${report.settings.concurrency}`)})</text>`,
    '</svg>',
    '',
  ].join('\n');
}

const { values } = parseArgs({
  options: {
    json: { type: 'string', default: 'bench/results/floor.json' },
    out: { type: 'string', default: 'docs/img/scaling.svg' },
  },
});
const report = JSON.parse(readFileSync(values.json, 'utf8')) as FloorReport;
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, scalingSvg(report));
console.log(`plot written to ${values.out}`);
