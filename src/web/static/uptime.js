// Uptime: the fleet's percentage online per day (uPlot), and per box 30 or 90 daily bars by
// connected fraction (height and colour, with the figure in each bar's title and in text), paged.
import uPlot from './vendor/uPlot.esm.js';
import { api, base, el, live, pager, pct, replace } from './common.js';
import { dayBar } from './bars.js';

const form = document.getElementById('days');
let chart;

function state() {
  const url = new URLSearchParams(location.search);
  return { days: url.get('days') === '30' ? 30 : 90, page: Number(url.get('page')) || 1 };
}

function go(days, page) {
  history.replaceState(null, '', `${location.pathname}?days=${days}${page > 1 ? `&page=${page}` : ''}`);
  refresh();
}

form.addEventListener('change', () => go(form.elements.namedItem('days').value, 1));

async function load() {
  const s = state();
  for (const r of form.querySelectorAll('input')) r.checked = Number(r.value) === s.days;
  const data = await api(`api/uptime?days=${s.days}&page=${s.page}`);
  const from = Date.parse(data.from) / 1000;
  const x = data.fleet.map((_, i) => from + i * 86400);
  const y = data.fleet.map((f) => (f === null ? null : Math.round(f * 10000) / 100));
  const holder = document.getElementById('fleet-chart');
  chart?.destroy();
  chart = new uPlot(
    {
      width: Math.max(320, Math.min(1100, holder.clientWidth || 900)),
      height: 200,
      scales: { y: { range: [0, 100] } },
      axes: [{}, { label: '% online' }],
      series: [{}, { label: 'Fleet online', stroke: '#1a7f37', width: 2, fill: 'rgba(26,127,55,0.1)', points: { show: true, size: 6 }, value: (_u, v) => (v === null ? '–' : `${v}%`) }],
    },
    [x, y],
    holder,
  );
  holder.setAttribute('aria-label', `Fleet online per day over ${s.days} days; latest ${pct(data.fleet.filter((f) => f !== null).at(-1) ?? null)}`);
  const start = Date.parse(data.from);
  replace(
    document.getElementById('bars'),
    ...data.boxes.map((b) => {
      const known = b.uptime.filter((f) => f !== null);
      const avg = known.length ? known.reduce((a, c) => a + c, 0) / known.length : null;
      return el(
        'li',
        { dataset: { serial: b.serial } },
        el('span', {}, el('a', { href: `${base}boxes/${encodeURIComponent(b.serial)}` }, b.serial), ' ', el('span', { class: 'name' }, b.name)),
        el('span', { class: 'bar-row', role: 'img', 'aria-label': `${b.serial}: average ${pct(avg)} over ${s.days} days` }, ...b.uptime.map((f, i) => dayBar(start + i * 86400000, f))),
        el('span', { class: 'num' }, pct(avg)),
      );
    }),
  );
  pager(document.getElementById('pager'), data.page, data.pages, (p) => go(s.days, p));
}

const refresh = live(load);
