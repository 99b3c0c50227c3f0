// Shared by every dashboard page: the JSON API, building DOM from untrusted text (textContent
// only, never innerHTML), times in the browser's zone with the zone named, the live event stream,
// the gateway line in the header, paging, and the admin token (kept in sessionStorage).

export const base = document.documentElement.dataset.base || '/';

// Relative times ("2m ago") are measured on the daemon's clock (simulated time in the demo): the
// `x-boxwatch-now` header of the latest answer, moved on by the page's monotonic timer since then.
// Until the first answer the anchor is the page's own start time.
let anchor = { server: performance.timeOrigin, at: 0 };

/** Now on the daemon's clock, in milliseconds. */
export const serverNow = () => anchor.server + (performance.now() - anchor.at);

/** GET (or another method) of an API path below the base; throws an Error with the API's message. */
export async function api(path, init = {}) {
  const res = await fetch(base + path.replace(/^\//, ''), { ...init, headers: { accept: 'application/json', ...(init.headers || {}) } });
  const now = Date.parse(res.headers.get('x-boxwatch-now') || '');
  if (Number.isFinite(now)) anchor = { server: now, at: performance.now() };
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const err = new Error(body.message || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return body;
}

/** An element with attributes (strings set with setAttribute, `on*` as listeners) and children (text nodes for strings). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
}

export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const fmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: zone });
const zoneName = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short', timeZone: zone }).formatToParts(new Date(serverNow())).find((p) => p.type === 'timeZoneName')?.value;

/** `12 Mar 2026, 14:03:00` in the browser's zone. */
export const localTime = (iso) => fmt.format(new Date(iso));

/** A <time> showing the local time, with the exact UTC time on hover. */
export function timeEl(iso, text) {
  if (!iso) return el('span', { class: 'muted' }, 'never');
  return el('time', { datetime: iso, title: `${iso.replace(/\.\d{3}Z$/, 'Z')} (UTC)` }, text ?? localTime(iso));
}

/** "2m ago", "just now", "in 5s". */
export function ago(iso, now = serverNow()) {
  const diff = now - Date.parse(iso);
  const abs = Math.abs(diff);
  if (abs < 5000) return 'just now';
  const units = [['d', 86400000], ['h', 3600000], ['m', 60000], ['s', 1000]];
  const [u, ms] = units.find(([, ms]) => abs >= ms);
  const n = Math.floor(abs / ms);
  return diff >= 0 ? `${n}${u} ago` : `in ${n}${u}`;
}

/** A state badge: a word and a symbol, never colour alone. */
const SYMBOLS = { online: '●', offline: '✕', stale: '◐', missing: '?', critical: '▲', warning: '◆', info: 'ℹ', firing: '!', pending: '…', resolved: '✓' };
export function badge(word, kind = word) {
  return el('span', { class: `badge badge-${kind}` }, el('span', { 'aria-hidden': 'true' }, SYMBOLS[kind] || '•'), ' ', word);
}

/** Signal in dBm as 0-4 bars (text, for screen readers too). */
export function bars(dbm) {
  if (dbm === null || dbm === undefined) return '–';
  const n = dbm >= -70 ? 4 : dbm >= -85 ? 3 : dbm >= -100 ? 2 : dbm >= -110 ? 1 : 0;
  return el('span', { class: 'signal' }, el('span', { class: 'bars', 'aria-hidden': 'true' }, '▮'.repeat(n) + '▯'.repeat(4 - n)), ` ${dbm} dBm (${n}/4)`);
}

/** Page links for a result of `pages` pages; `go(page)` shows one. */
export function pager(nav, page, pages, go) {
  const btn = (label, p, current = false) =>
    el('button', { type: 'button', disabled: p < 1 || p > pages || current ? true : undefined, 'aria-current': current ? 'page' : undefined, onclick: () => go(p) }, label);
  replace(nav, btn('‹ Previous', page - 1), el('span', {}, ` Page ${page} of ${pages} `), btn('Next ›', page + 1));
}

/** Fills the header's gateway line from /api/gateway. */
export async function refreshGateway() {
  const g = await api('api/gateway');
  const line = document.getElementById('gateway');
  if (!line) return;
  let state = 'ok';
  let text;
  const skew = g.skewMs ? `; gateway clock ${g.skewMs > 0 ? 'ahead' : 'behind'} by ${Math.round(Math.abs(g.skewMs) / 1000)}s` : '';
  if (!g.lastCycle) {
    state = 'unknown';
    text = 'Gateway: no poll cycle yet';
  } else if (g.failingSince) {
    state = 'failing';
    const accounts = g.failingAccounts || [];
    const which = accounts.length === 0 || (accounts.length === 1 && accounts[0] === 'default') ? '' : ` (${accounts.join(', ')})`;
    text = `Gateway failing${which} since ${ago(g.failingSince)} (${g.lastErrorCode || 'error'}); last good cycle ${g.lastSuccessAt ? ago(g.lastSuccessAt) : 'never'}${skew}`;
  } else {
    text = `Gateway OK: last cycle ${ago(g.lastSuccessAt || g.lastCycle.startedAt)}${skew}`;
  }
  line.dataset.state = state;
  line.textContent = text;
}

/**
 * Runs `update` now and after every poll cycle (server-sent events; no polling loop). Updates do
 * not overlap: an event during one runs it once more afterwards. Returns the guarded update, for
 * the page's own changes (filters, ranges); `body[data-updated]` (a count) changes after each.
 */
let updates = 0;

export function live(update) {
  const status = document.getElementById('live');
  let running = false;
  let again = false;
  const run = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await Promise.all([update(), refreshGateway()]);
      } while (again);
      // Milliseconds from navigation to the first complete render (the benchmark reads it).
      document.body.dataset.firstRenderMs ??= String(Math.round(performance.now()));
      document.body.dataset.updated = String((updates += 1));
    } catch (err) {
      if (status) status.textContent = `Update failed: ${err.message}`;
    } finally {
      running = false;
    }
  };
  // One event stream while the page is visible. A hidden tab closes its stream and catches up when
  // shown again: a browser allows only six connections to one server over HTTP/1.1, and every open
  // stream holds one, so a seventh tab would otherwise never load.
  let source = null;
  const connect = () => {
    if (source) return;
    source = new EventSource(base + 'events');
    source.addEventListener('open', () => status && (status.textContent = 'Live updates: on (after every poll cycle).'));
    source.addEventListener('error', () => status && (status.textContent = 'Live updates: reconnecting…'));
    source.addEventListener('cycle', () => run());
  };
  const disconnect = () => {
    source?.close();
    source = null;
    if (status) status.textContent = 'Live updates: paused while this tab is hidden.';
  };
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') disconnect();
    else {
      connect();
      void run();
    }
  });
  window.addEventListener('pagehide', disconnect);
  if (document.visibilityState !== 'hidden') connect();
  void run();
  return run;
}

export function showZone() {
  const z = document.getElementById('zone');
  if (z) z.textContent = `${zone}${zoneName ? ` (${zoneName})` : ''}`;
}
showZone();

// --- admin token (writes) -------------------------------------------------------------------
const TOKEN_KEY = 'boxwatch.adminToken';
export const getToken = () => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY));

/** A write with the admin token in the Authorization header; asks for the token once if none is kept. */
export async function write(path, body, ask) {
  let token = getToken();
  if (!token) {
    token = await ask();
    if (!token) throw new Error('no admin token given');
    setToken(token);
  }
  try {
    return await api(path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body ?? {}) });
  } catch (err) {
    if (err.status === 401) setToken(null);
    throw err;
  }
}

/** Percent with no decimals, or – for null. */
export const pct = (f) => (f === null || f === undefined ? '–' : `${Math.round(f * 1000) / 10}%`);

/** Asks for the admin token (writes: silences, acknowledgements) in a modal dialog; resolves to the token or null when cancelled. */
export function askToken() {
  return new Promise((resolve) => {
    const input = el('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, id: 'token-input' });
    const dialog = el(
      'dialog',
      { id: 'token-dialog', 'aria-labelledby': 'token-h' },
      el(
        'form',
        { method: 'dialog' },
        el('h2', { id: 'token-h' }, 'Admin token'),
        el('p', {}, 'Silences and acknowledgements need the daemon’s admin token (http.admin_token). It is kept for this tab only.'),
        el('label', {}, 'Token ', input),
        el('p', {}, el('button', { type: 'submit', value: 'ok' }, 'Use token'), ' ', el('button', { type: 'submit', value: 'cancel', formnovalidate: true }, 'Cancel')),
      ),
    );
    dialog.addEventListener('close', () => {
      const token = dialog.returnValue === 'ok' ? input.value.trim() : '';
      dialog.remove();
      resolve(token || null);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
