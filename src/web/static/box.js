// Box page: details, battery / signal / connected charts over a range (raw points for short
// ranges, hourly-or-coarser rollups with min/max bands for long ones, as the API decides), alert
// periods and firmware changes marked on the time axis, the alert timeline, and a 90-day daily
// uptime bar. Each chart keeps a data table beside it (for screen readers, and it is exactly the
// data the chart draws). Box text reaches the page only through textContent and canvas fillText.
import uPlot from './vendor/uPlot.esm.js';
import { ago, api, badge, bars, el, live, localTime, pct, replace, serverNow, timeEl } from './common.js';
import { dayBar } from './bars.js';

const serial = document.body.dataset.serial;
const enc = encodeURIComponent(serial);
const rangeForm = document.getElementById('range');
const charts = new Map();

/** The call failure share per time bucket (api/boxes/:serial/calls), charted after signal: weak signal explains failures. */
const CALL_FAILURES = { metric: 'call_failures', label: 'Call failures', unit: '%', fmt: (v) => `${v}%` };

/** uPlot data from the call buckets: the failed share of the final calls started in each (none: a gap). */
function callSeries(c) {
  const x = c.buckets.map((b) => Date.parse(b.t) / 1000);
  return { kind: 'raw', data: [x, c.buckets.map((b) => b.failedPercent)], isPoint: x.map(() => true) };
}

const METRICS = [
  { metric: 'battery', label: 'Battery', unit: '%', fmt: (v) => `${v}%` },
  { metric: 'signal', label: 'Signal', unit: 'dBm', fmt: (v) => `${v} dBm` },
  { metric: 'connected', label: 'Connected', unit: '', fmt: (v) => (v === 1 ? 'yes' : v === 0 ? 'no' : pct(v)) },
];

function rangeFromUrl() {
  const url = new URLSearchParams(location.search);
  if (url.get('from')) return { from: url.get('from'), to: url.get('to') || undefined };
  return { since: url.get('since') || '24h' };
}

function rangeQuery(r) {
  const q = new URLSearchParams();
  if (r.since) q.set('since', r.since);
  if (r.from) q.set('from', r.from);
  if (r.to) q.set('to', r.to);
  return q;
}

const toLocalInput = (iso) => {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

function fillRange(r) {
  for (const input of rangeForm.querySelectorAll('input[name=since]')) input.checked = input.value === (r.since ?? 'custom');
  if (r.from) rangeForm.elements.namedItem('from').value = toLocalInput(r.from);
  if (r.to) rangeForm.elements.namedItem('to').value = toLocalInput(r.to);
}

function setRange(r) {
  history.pushState(null, '', `${location.pathname}?${rangeQuery(r).toString()}`);
  return refresh();
}

rangeForm.addEventListener('change', (e) => {
  if (e.target.name === 'since' && e.target.value !== 'custom') setRange({ since: e.target.value });
});
rangeForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const from = rangeForm.elements.namedItem('from').value;
  const to = rangeForm.elements.namedItem('to').value;
  if (!from) {
    document.getElementById('range-note').textContent = 'Choose a start time for a custom range.';
    return;
  }
  setRange({ from: new Date(from).toISOString(), to: to ? new Date(to).toISOString() : undefined });
});
window.addEventListener('popstate', () => refresh());

/** uPlot data ([x seconds], series...) from an API history answer; a gap in raw data becomes a null. */
function seriesOf(h) {
  const sec = (iso) => Date.parse(iso) / 1000;
  if (h.kind === 'raw') {
    const x = [];
    const y = [];
    const isPoint = [];
    h.points.forEach((p, i) => {
      x.push(sec(p.t));
      y.push(p.value);
      isPoint.push(true);
      const next = h.points[i + 1];
      if (p.until && (!next || Date.parse(p.until) < Date.parse(next.t))) {
        x.push(sec(p.until));
        y.push(next ? null : p.value); // the last run holds until its end; a gap is a break
        isPoint.push(false);
      }
    });
    return { kind: 'raw', data: [x, y], isPoint };
  }
  const x = h.points.map((p) => sec(p.t));
  return { kind: 'rollup', data: [x, h.points.map((p) => p.mean), h.points.map((p) => p.min), h.points.map((p) => p.max)], isPoint: x.map(() => true) };
}

/** Shaded alert periods and firmware-change lines, drawn under the series. */
function markersPlugin(marks) {
  return {
    hooks: {
      drawClear: [
        (u) => {
          const { ctx } = u;
          const { top, height } = u.bbox;
          ctx.save();
          for (const p of marks.periods) {
            const x0 = u.valToPos(Math.max(p.from, u.scales.x.min), 'x', true);
            const x1 = u.valToPos(Math.min(p.to, u.scales.x.max), 'x', true);
            if (x1 <= x0) continue;
            ctx.fillStyle = p.severity === 'critical' ? 'rgba(220,50,47,0.15)' : 'rgba(203,140,0,0.15)';
            ctx.fillRect(x0, top, x1 - x0, height);
          }
          ctx.strokeStyle = 'rgba(108,113,196,0.9)';
          ctx.setLineDash([4, 3]);
          ctx.fillStyle = 'rgba(108,113,196,1)';
          ctx.font = `${Math.round(11 * devicePixelRatio)}px sans-serif`;
          for (const f of marks.firmware) {
            if (f.t < u.scales.x.min || f.t > u.scales.x.max) continue;
            const x = u.valToPos(f.t, 'x', true);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.fillText(f.version, x + 3, top + 12 * devicePixelRatio); // canvas text: never parsed as HTML
          }
          ctx.restore();
        },
      ],
    },
  };
}

function chartOptions(m, s, marks, width) {
  const stepped = uPlot.paths.stepped({ align: 1 });
  const base = {
    width,
    height: 180,
    scales: { x: { time: true }, y: m.metric === 'connected' ? { range: [-0.05, 1.05] } : m.metric === 'call_failures' ? { range: [0, 100] } : {} },
    axes: [{}, { label: m.unit, values: (_u, vals) => vals.map((v) => (m.metric === 'connected' ? (v === 1 ? 'yes' : v === 0 ? 'no' : '') : String(v))) }],
    plugins: [markersPlugin(marks)],
    cursor: { focus: { prox: 30 } },
  };
  if (s.kind === 'raw') {
    return { ...base, series: [{}, { label: m.label, stroke: '#268bd2', width: 2, paths: stepped, spanGaps: false, value: (_u, v) => (v === null ? '–' : m.fmt(v)) }] };
  }
  return {
    ...base,
    series: [
      {},
      { label: `${m.label} (mean)`, stroke: '#268bd2', width: 2, value: (_u, v) => (v === null ? '–' : m.fmt(Math.round(v * 100) / 100)) },
      { label: 'min', stroke: 'rgba(38,139,210,0.35)', width: 1, value: (_u, v) => (v === null ? '–' : m.fmt(v)) },
      { label: 'max', stroke: 'rgba(38,139,210,0.35)', width: 1, value: (_u, v) => (v === null ? '–' : m.fmt(v)) },
    ],
    bands: [{ series: [3, 2], fill: 'rgba(38,139,210,0.15)' }],
  };
}

/**
 * The data table under a chart: the points the chart holds (read back from the chart), less the
 * ones added only to draw (the end of the last run, the start of a gap).
 */
function dataTable(m, u, kind, isPoint) {
  const [x, ...ys] = u.data;
  const head = kind === 'raw' ? ['Time', m.label] : ['Time', 'Mean', 'Min', 'Max'];
  const rows = [];
  for (let i = 0; i < x.length; i++) {
    if (!isPoint[i]) continue;
    rows.push(el('tr', {}, el('td', {}, timeEl(new Date(x[i] * 1000).toISOString())), ...ys.map((y) => el('td', { class: 'num' }, y[i] === null ? '–' : m.fmt(y[i])))));
  }
  return el(
    'details',
    { class: 'data' },
    el('summary', {}, `${m.label}: data (${rows.length} points)`),
    el('table', { class: 'chart-data', dataset: { metric: m.metric } }, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, ...rows)),
  );
}

function alertPeriods(transitions, toSec) {
  const open = new Map();
  const periods = [];
  for (const t of transitions) {
    const at = Date.parse(t.at) / 1000;
    if (t.to === 'firing') open.set(t.alert, { from: at, severity: t.severity, rule: t.rule });
    else if (open.has(t.alert) && t.to !== 'pending') {
      periods.push({ ...open.get(t.alert), to: at });
      open.delete(t.alert);
    }
  }
  for (const p of open.values()) periods.push({ ...p, to: toSec });
  return periods;
}

/** Firmware has raw history only, read for at most the API's 31 days: the end of a longer range. */
const RAW_MAX_MS = 31 * 86400000;
function firmwareRange(r) {
  if (r.since) {
    const m = /^(\d+)([hd])$/.exec(r.since);
    const ms = m ? Number(m[1]) * (m[2] === 'd' ? 86400000 : 3600000) : 0;
    return ms > RAW_MAX_MS ? { since: '31d' } : r;
  }
  const to = r.to ? Date.parse(r.to) : serverNow();
  return to - Date.parse(r.from) > RAW_MAX_MS ? { from: new Date(to - RAW_MAX_MS).toISOString(), to: r.to } : r;
}

async function load() {
  const r = rangeFromUrl();
  fillRange(r);
  const q = rangeQuery(r).toString();
  const [box, alerts, fw, uptime, calls, ...hist] = await Promise.all([
    api(`api/boxes/${enc}`),
    api(`api/boxes/${enc}/alerts?${q}`),
    api(`api/boxes/${enc}/history?metric=firmware&${rangeQuery(firmwareRange(r)).toString()}`),
    api(`api/boxes/${enc}/uptime?days=90`),
    document.body.dataset.calls === 'on' ? api(`api/boxes/${enc}/calls?${q}&limit=1`) : null, // only when calls are read
    ...METRICS.map((m) => api(`api/boxes/${enc}/history?metric=${m.metric}&${q}`)),
  ]);
  renderDetails(box);
  const toSec = Date.parse(hist[0].to) / 1000;
  // A change is a point whose version differs from the one before: the history starts a new run
  // after every gap (a gateway outage), often with the same version.
  const firmware = [];
  let version = null;
  for (const p of fw.points) {
    if (p.value === null || p.value === undefined) continue;
    if (version !== null && p.value !== version) firmware.push({ t: Date.parse(p.t) / 1000, version: String(p.value) });
    version = p.value;
  }
  const marks = { periods: alertPeriods(alerts.transitions, toSec), firmware };
  const kind = hist[0].kind;
  document.getElementById('range-note').textContent =
    `${localTime(hist[0].from)} – ${localTime(hist[0].to)}: ${kind === 'raw' ? 'every stored change' : `rollups of ${Math.round(hist[0].bucketMs / 3600000)} h, mean with min/max band`}.`;
  const container = document.getElementById('charts');
  const width = Math.max(320, Math.min(1100, container.clientWidth || 900));
  const figures = [];
  const drawn = METRICS.map((m, i) => ({ m, s: seriesOf(hist[i]), from: hist[i].from, to: hist[i].to }));
  if (calls) drawn.splice(2, 0, { m: CALL_FAILURES, s: callSeries(calls), from: calls.from, to: calls.to });
  drawn.forEach(({ m, s, from, to }) => {
    const opts = chartOptions(m, s, marks, width);
    opts.scales.x.range = () => [Date.parse(from) / 1000, Date.parse(to) / 1000];
    charts.get(m.metric)?.destroy();
    const holder = el('div', { class: 'chart', id: `chart-${m.metric}`, role: 'img', 'aria-label': `${m.label} over the chosen range; the data table follows` });
    const u = new uPlot(opts, s.data, holder);
    charts.set(m.metric, u);
    holder.dataset.kind = s.kind;
    figures.push(el('figure', {}, el('figcaption', {}, m.label), holder, dataTable(m, u, s.kind, s.isPoint)));
  });
  replace(container, ...figures);
  replace(
    document.getElementById('legend'),
    ...marks.periods.map((p) => el('li', {}, badge(p.severity), ` ${p.rule} firing `, timeEl(new Date(p.from * 1000).toISOString()), ' – ', timeEl(new Date(p.to * 1000).toISOString()))),
    ...marks.firmware.map((f) => el('li', {}, 'Firmware changed to ', el('code', {}, f.version), ' at ', timeEl(new Date(f.t * 1000).toISOString()))),
  );
  renderUptime(uptime);
  renderTimeline(alerts.transitions);
}

function renderDetails(b) {
  document.getElementById('title').textContent = `${b.name} (${b.serial})`;
  document.title = `${b.serial} · boxwatch`;
  const state = b.missingSince ? 'missing' : b.connected ? 'online' : 'offline';
  const item = (k, ...v) => [el('dt', {}, k), el('dd', {}, ...v)];
  replace(
    document.getElementById('details'),
    ...item('State', badge(state)),
    ...item('Battery', b.battery === null ? '–' : `${b.battery}%`),
    ...item('Signal', bars(b.signal)),
    ...item('Firmware', b.firmware),
    ...item('Last seen', timeEl(b.lastSeen, `${ago(b.lastSeen)} (${localTime(b.lastSeen)})`)),
    ...item('Location', b.location ?? '–'),
    ...item('IP', b.ip ?? '–'),
    ...item('Registered', timeEl(b.registeredAt)),
  );
}

function renderUptime(u) {
  const holder = document.getElementById('uptime');
  const from = Date.parse(u.from);
  const known = u.uptime.filter((f) => f !== null);
  const avg = known.length ? known.reduce((a, b) => a + b, 0) / known.length : null;
  holder.setAttribute('aria-label', `Daily uptime, ${u.days} days: average ${pct(avg)}, ${known.filter((f) => f < 0.99).length} days below 99%`);
  replace(holder, ...u.uptime.map((f, i) => dayBar(from + i * 86400000, f)));
}

function renderTimeline(transitions) {
  const list = document.getElementById('timeline');
  const items = [...transitions].reverse().map((t) =>
    el(
      'li',
      {},
      timeEl(t.at),
      ' ',
      badge(t.severity),
      ` ${t.rule}: ${t.from} → `,
      badge(t.to),
      t.summary ? ` — ${t.summary}` : '',
      t.heldBack ? el('span', { class: 'held' }, ` (held back: ${t.heldBack}${t.heldBy.length ? ` by ${t.heldBy.join(', ')}` : ''})`) : '',
    ),
  );
  replace(list, ...(items.length ? items : [el('li', { class: 'muted' }, 'No alert transitions in this range.')]));
}

const refresh = live(load);
