// Alerts: active or recent alerts, each with its transitions, what held it back (silence,
// inhibition, gateway down) and the notifications sent for it per notifier, with delivery status
// and attempts, read from the outbox (the notification log). A firing alert shows who
// acknowledged it; with the admin token configured, an unacknowledged one has an Acknowledge form
// (POST /api/acks: its repeats stop until it resolves).
import { api, askToken, badge, base, el, live, replace, timeEl, write } from './common.js';

const writable = document.body.dataset.writable === 'true';

const filter = document.getElementById('alert-filter');
filter.addEventListener('change', () => {
  const show = filter.elements.namedItem('show').value;
  history.replaceState(null, '', `${location.pathname}${show === 'active' ? '' : `?show=${show}`}`);
  refresh();
});

function showFromUrl() {
  const show = new URLSearchParams(location.search).get('show');
  return ['24h', '7d'].includes(show) ? show : 'active';
}

function heldText(t) {
  if (!t.heldBack) return null;
  const why = { silenced: 'silenced', inhibited: 'inhibited', gateway_down: 'gateway down' }[t.heldBack] || t.heldBack;
  return el('span', { class: 'held' }, ` — held back: ${why}${t.heldBy.length ? ` (${t.heldBy.join(', ')})` : ''}`);
}

/** Who acknowledged it, or (writable, firing) a form to acknowledge it. */
function ackPart(alert) {
  if (alert.ack) {
    const until = alert.ack.until ? [' until ', timeEl(alert.ack.until)] : ' until it resolves';
    return el('p', { class: 'ack' }, `Acknowledged by ${alert.ack.by}: ${alert.ack.comment} — no repeats`, until);
  }
  if (!writable || alert.status !== 'firing' || !alert.id) return null;
  const result = el('span', { class: 'ack-result', role: 'status' });
  const form = el(
    'form',
    { class: 'ack-form', dataset: { alert: alert.id } },
    el('label', {}, 'Comment ', el('input', { name: 'comment', required: true, autocomplete: 'off' })),
    ' ',
    el('label', {}, 'For ', el('input', { name: 'for', placeholder: 'until resolved', size: 8 })),
    ' ',
    el('button', { type: 'submit' }, 'Acknowledge'),
    ' ',
    result,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const duration = form.elements.namedItem('for').value.trim();
    const body = { alert: alert.id, comment: form.elements.namedItem('comment').value, ...(duration ? { for: duration } : {}) };
    try {
      const { ack } = await write('api/acks', body, askToken);
      result.className = 'ack-result';
      result.textContent = `Acknowledged by ${ack.by}; the daemon applies it at its next cycle.`;
      form.querySelector('button').disabled = true;
    } catch (err) {
      result.className = 'ack-result error';
      result.textContent = `Not acknowledged: ${err.message}`;
    }
  });
  return form;
}

function card(alert, transitions, notifications) {
  const target = alert.serial ? el('a', { href: `${base}boxes/${encodeURIComponent(alert.serial)}` }, alert.serial) : 'gateway';
  const byNotifier = new Map();
  for (const n of notifications) {
    if (!byNotifier.has(n.notifier)) byNotifier.set(n.notifier, []);
    byNotifier.get(n.notifier).push(n);
  }
  return el(
    'article',
    { class: 'alert-card', dataset: { rule: alert.rule, serial: alert.serial, status: alert.status } },
    el('h3', {}, badge(alert.severity), ' ', alert.rule, ' on ', target, ' — ', badge(alert.status)),
    ackPart(alert),
    el('h4', {}, 'Transitions'),
    el('ol', {}, ...transitions.map((t) => el('li', {}, timeEl(t.at), ` ${t.from} → ${t.to}`, t.summary ? `: ${t.summary}` : '', heldText(t)))),
    el('h4', {}, 'Notifications'),
    byNotifier.size === 0
      ? el('p', { class: 'muted' }, 'None sent in this period.')
      : el(
          'ul',
          { class: 'notifications' },
          ...[...byNotifier].map(([notifier, list]) =>
            el(
              'li',
              { dataset: { notifier } },
              el('strong', {}, notifier),
              el(
                'ul',
                {},
                ...list.map((n) => {
                  const item = n.items.find((i) => i.rule === alert.rule && i.serial === alert.serial);
                  return el(
                    'li',
                    { dataset: { status: n.status } },
                    `${item ? item.status : ''} message `,
                    timeEl(n.createdAt),
                    ': ',
                    badge(n.status),
                    `, ${n.attempts} attempt${n.attempts === 1 ? '' : 's'}`,
                    n.doneAt ? [' (', timeEl(n.doneAt), ')'] : '',
                    n.status === 'pending' && n.nextAttemptAt ? [', next try ', timeEl(n.nextAttemptAt)] : '',
                    n.lastError ? el('span', { class: 'error' }, ` — ${n.lastError}`) : '',
                  );
                }),
              ),
            ),
          ),
        ),
  );
}

async function load() {
  const show = showFromUrl();
  for (const r of filter.querySelectorAll('input')) r.checked = r.value === show;
  const since = show === 'active' ? '7d' : show;
  const [active, { transitions }, { notifications }] = await Promise.all([
    show === 'active' ? api('api/alerts?active=true') : Promise.resolve(null),
    api(`api/alerts/transitions?since=${since}`),
    api(`api/notifications?since=${since}`),
  ]);
  const keyOf = (a) => `${a.rule}\u0000${'box' in a ? (a.box ?? '') : a.serial}`;
  const alerts = new Map();
  // Alert views and transitions name the box as `box` (null for the gateway's own alerts).
  if (active) for (const a of active.alerts) alerts.set(keyOf({ rule: a.rule, serial: a.box ?? '' }), { id: a.id, rule: a.rule, serial: a.box ?? '', severity: a.severity, status: a.state, ack: a.ack });
  else {
    for (const t of transitions) if (!alerts.has(keyOf(t))) alerts.set(keyOf(t), { rule: t.rule, serial: t.box ?? '', severity: t.severity, status: t.to });
  }
  const byKey = new Map();
  for (const t of [...transitions].reverse()) {
    const k = keyOf(t);
    if (!byKey.has(k)) byKey.set(k, []);
    byKey.get(k).push(t);
  }
  const holder = document.getElementById('alerts');
  if (alerts.size === 0) {
    replace(holder, el('p', { class: 'muted' }, show === 'active' ? 'No active alerts.' : 'No alerts in this period.'));
    return;
  }
  replace(
    holder,
    ...[...alerts].map(([k, a]) =>
      card(
        a,
        byKey.get(k) ?? [],
        notifications.filter((n) => n.items.some((i) => i.rule === a.rule && i.serial === a.serial)),
      ),
    ),
  );
}

const refresh = live(load);
