// Silences: the list (expired ones on request), and, when the daemon has an admin token, a form
// to create one with a live preview of the open alerts it would hold back (as `silence add`
// shows), and an Expire button per silence. The token is asked for once, in a dialog of this
// page, and kept in sessionStorage (never in a URL or a cookie).
import { api, askToken, badge, el, getToken, live, replace, setToken, timeEl, write } from './common.js';

const writable = document.body.dataset.writable === 'true';
const form = document.getElementById('silence-form');
const showExpired = document.getElementById('show-expired');

const list = (text) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

let previewTimer;
async function preview() {
  const out = document.getElementById('preview');
  const q = new URLSearchParams({ boxes: form.elements.namedItem('boxes').value, rules: form.elements.namedItem('rules').value });
  if (!list(q.get('boxes')).length && !list(q.get('rules')).length) {
    replace(out, 'Give at least one box glob or rule to see what the silence would hold back.');
    return;
  }
  const { alerts } = await api(`api/silences/preview?${q.toString()}`);
  replace(
    out,
    alerts.length === 0 ? 'It matches no open alert now (it still applies to alerts that open later).' : `It would hold back ${alerts.length} open alert(s):`,
    alerts.length ? el('ul', {}, ...alerts.map((a) => el('li', {}, badge(a.severity), ` ${a.rule} `, a.serial || '(gateway)', ` (${a.status})`))) : null,
  );
}

if (form) {
  form.addEventListener('input', () => {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => preview().catch(() => undefined), 200);
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const result = document.getElementById('form-result');
    const body = {
      boxes: list(form.elements.namedItem('boxes').value),
      rules: list(form.elements.namedItem('rules').value),
      for: form.elements.namedItem('for').value.trim(),
      comment: form.elements.namedItem('comment').value,
    };
    try {
      const { silence } = await write('api/silences', body, askToken);
      result.className = '';
      result.textContent = `Created silence ${silence.id}; the daemon applies it at its next cycle.`;
      form.reset();
      await refresh();
    } catch (err) {
      result.className = 'error';
      result.textContent = `Not created: ${err.message}`;
    }
  });
}
showExpired.addEventListener('change', () => refresh());

async function expire(id) {
  try {
    await write(`api/silences/${encodeURIComponent(id)}/expire`, {}, askToken);
  } catch (err) {
    alertLine(`Not expired: ${err.message}`);
  }
  await refresh();
}

function alertLine(text) {
  const p = document.getElementById('form-result') || document.getElementById('silences');
  p.prepend(el('p', { class: 'error', role: 'alert' }, text));
}

async function load() {
  const data = await api(`api/silences${showExpired.checked ? '?all=true' : ''}`);
  const holder = document.getElementById('silences');
  if (data.silences.length === 0) {
    replace(holder, el('p', { class: 'muted' }, showExpired.checked ? 'No silences.' : 'No active or pending silences.'));
    return;
  }
  const head = ['ID', 'State', 'Boxes', 'Rules', 'Starts', 'Ends', 'By', 'Comment', ''];
  replace(
    holder,
    el(
      'table',
      { id: 'silence-table' },
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))),
      el(
        'tbody',
        {},
        ...data.silences.map((s) =>
          el(
            'tr',
            { dataset: { id: s.id, state: s.state } },
            el('td', {}, el('code', {}, s.id)),
            el('td', {}, badge(s.state, s.state === 'active' ? 'warning' : s.state === 'expired' ? 'resolved' : 'info')),
            el('td', {}, s.boxes.join(', ') || '–'),
            el('td', {}, s.rules.join(', ') || '–'),
            el('td', {}, timeEl(s.startsAt)),
            el('td', {}, timeEl(s.endsAt)),
            el('td', {}, s.createdBy ?? '–'),
            el('td', {}, s.comment),
            el('td', {}, writable && s.state !== 'expired' ? el('button', { type: 'button', onclick: () => expire(s.id) }, 'Expire') : ''),
          ),
        ),
      ),
    ),
  );
}

if (getToken() === '') setToken(null);
const refresh = live(load);
