// Fleet overview: counts, filters (kept in the URL, so links can be shared and survive a reload),
// and one page of boxes at a time, trouble first (the server filters and pages: 10,000 boxes are
// never 10,000 rows of DOM).
import { ago, api, badge, bars, base, el, live, pager, replace, timeEl } from './common.js';

const form = document.getElementById('filters');
const FIELDS = ['account', 'state', 'severity', 'rule', 'firmware', 'location', 'q'];

function paramsFromUrl() {
  const url = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  for (const k of [...FIELDS, 'page']) if (url.get(k)) out.set(k, url.get(k));
  return out;
}

function fillForm(params) {
  for (const k of FIELDS) {
    const input = form.elements.namedItem(k);
    if (input === document.activeElement && input.tagName === 'INPUT') continue; // never under the user's typing
    const v = params.get(k) || '';
    if (input.tagName === 'SELECT' && v && ![...input.options].some((o) => o.value === v)) input.append(el('option', { value: v }, v));
    input.value = v;
  }
}

function setSelectOptions(select, values, counts) {
  const current = select.value;
  const keep = new Set(values);
  if (current) keep.add(current);
  replace(select, el('option', { value: '' }, 'any'), ...[...keep].map((v) => el('option', { value: v }, counts?.get(v) === undefined ? v : `${v} (${counts.get(v)})`)));
  select.value = current;
}

function navigate(params, push = true) {
  const qs = params.toString();
  const url = location.pathname + (qs ? `?${qs}` : '');
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
  return refresh();
}

function readForm() {
  const params = new URLSearchParams();
  for (const k of FIELDS) {
    const v = form.elements.namedItem(k).value.trim();
    if (v) params.set(k, v);
  }
  return params;
}

let timer;
form.addEventListener('input', (e) => {
  clearTimeout(timer);
  timer = setTimeout(() => navigate(readForm(), false), e.target.type === 'search' ? 250 : 0);
});
form.addEventListener('submit', (e) => e.preventDefault());
form.addEventListener('reset', () => setTimeout(() => navigate(new URLSearchParams()), 0));
window.addEventListener('popstate', () => {
  fillForm(paramsFromUrl());
  refresh();
});

function countItem(label, n, kind, filter) {
  const href = `${base}?${new URLSearchParams(filter).toString()}`;
  return el('li', { class: `count count-${kind}` }, el('a', { href }, el('span', { class: 'n' }, String(n)), ' ', badge(label, kind)));
}

function row(b, now) {
  const link = el('a', { href: `${base}boxes/${encodeURIComponent(b.serial)}` }, b.serial);
  return el(
    'tr',
    { dataset: { serial: b.serial, state: b.state } },
    el('td', {}, badge(b.state)),
    el('td', {}, link, el('br'), el('span', { class: 'name' }, b.name)),
    el('td', { class: 'num' }, b.battery === null ? '–' : `${b.battery}%`),
    el('td', {}, bars(b.signal)),
    el('td', {}, b.firmware),
    el('td', {}, timeEl(b.lastSeen, ago(b.lastSeen, now))),
    el('td', {}, b.location ?? '–'),
    el(
      'td',
      {},
      b.alerts.length === 0
        ? el('span', { class: 'muted' }, 'none')
        : el('ul', { class: 'alert-list' }, ...b.alerts.map((a) => el('li', {}, badge(a.severity), ' ', a.rule, a.status === 'firing' ? ' (firing)' : ' (pending)'))),
    ),
  );
}

// Replicas (`cluster:`): who serves each account, as /api/cluster says (src/cluster/servers.ts
// decides; this only shows it). Hidden for a single daemon that never leased anything.
function serverRow(s, now) {
  const who =
    s.state === 'serving'
      ? s.replica
      : badge(`nobody (${s.state === 'released' ? 'released' : `lease expired ${ago(s.leaseExpiresAt, now)}`})`, 'offline');
  return el(
    'tr',
    { dataset: { account: s.account, state: s.state } },
    el('td', {}, s.account),
    el('td', {}, who),
    el('td', {}, s.host === null ? '–' : `${s.host} (pid ${s.pid})`),
    el('td', {}, s.heartbeatAt === null ? '–' : timeEl(s.heartbeatAt, ago(s.heartbeatAt, now))),
    el('td', {}, s.state === 'serving' ? timeEl(s.leaseExpiresAt) : '–'),
  );
}

function showServers(cluster) {
  const section = document.getElementById('replicas');
  section.hidden = cluster.replica === null && cluster.accounts.length === 0;
  if (section.hidden) return;
  const now = Date.parse(cluster.now);
  document.getElementById('replicas-self').textContent =
    cluster.replica === null ? 'This daemon is not a replica (no cluster: section); the leases below were written by replicas of this database.' : `This page is served by replica ${cluster.replica.id}, which leads ${cluster.replica.leads.length === 0 ? 'no account' : cluster.replica.leads.join(', ')}.`;
  replace(document.querySelector('#servers tbody'), ...cluster.accounts.map((s) => serverRow(s, now)));
}

async function load() {
  const params = paramsFromUrl();
  const [data, cluster] = await Promise.all([api(`api/overview?${params.toString()}`), api('api/cluster')]);
  showServers(cluster);
  const now = Date.parse(data.now);
  const c = data.counts;
  replace(
    document.getElementById('counts'),
    el('li', { class: 'count' }, el('span', { class: 'n', id: 'count-total' }, String(c.total)), ' boxes'),
    countItem('online', c.online, 'online', { state: 'online' }),
    countItem('offline', c.offline, 'offline', { state: 'offline' }),
    countItem('stale', c.stale, 'stale', { state: 'stale' }),
    countItem('missing', c.missing, 'missing', { state: 'missing' }),
    countItem('critical', c.alerting.critical, 'critical', { state: 'alerting', severity: 'critical' }),
    countItem('warning', c.alerting.warning, 'warning', { state: 'alerting', severity: 'warning' }),
    countItem('info', c.alerting.info, 'info', { state: 'alerting', severity: 'info' }),
  );
  // The account filter shows once the fleet has boxes of several accounts (gateways:).
  const accounts = data.facets.accounts;
  const accountFilter = document.getElementById('account-filter');
  accountFilter.hidden = accounts.length < 2 && !params.get('account');
  accountFilter.style.display = accountFilter.hidden ? 'none' : '';
  setSelectOptions(form.elements.namedItem('account'), accounts.map((a) => a.name), new Map(accounts.map((a) => [a.name, a.count])));
  setSelectOptions(form.elements.namedItem('rule'), data.facets.rules);
  setSelectOptions(form.elements.namedItem('firmware'), data.facets.firmware.map((f) => f.version), new Map(data.facets.firmware.map((f) => [f.version, f.count])));
  fillForm(params);
  const gw = data.gatewayAlerts.length ? ` Gateway alerts: ${data.gatewayAlerts.map((a) => `${a.rule}${a.account === 'default' ? '' : ` [${a.account}]`} (${a.status})`).join(', ')}.` : '';
  const first = data.matched === 0 ? 0 : (data.page - 1) * data.per + 1;
  document.getElementById('summary').textContent =
    `${data.matched} of ${c.total} boxes match; showing ${first}–${Math.min(data.page * data.per, data.matched)}.${gw}`;
  replace(document.querySelector('#boxes tbody'), ...data.boxes.map((b) => row(b, now)));
  pager(document.getElementById('pager'), data.page, data.pages, (p) => {
    const next = paramsFromUrl();
    next.set('page', String(p));
    navigate(next);
  });
}

fillForm(paramsFromUrl());
const refresh = live(load);
