// Firmware: the versions across the fleet as a bar chart (bars of HTML, labelled with counts and
// shares in text), and the boxes behind each version.
import { api, base, el, live, replace } from './common.js';

let chosen = new URLSearchParams(location.search).get('version');

async function load() {
  const { versions } = await api('api/firmware');
  const total = versions.reduce((n, v) => n + v.count, 0) || 1;
  const max = Math.max(1, ...versions.map((v) => v.count));
  replace(
    document.getElementById('versions'),
    ...versions.map((v) =>
      el(
        'li',
        { dataset: { version: v.version } },
        el('button', { type: 'button', 'aria-pressed': String(v.version === chosen), onclick: () => choose(v.version) }, v.version),
        el('span', { class: `hbar w${Math.max(0, Math.round((v.count / max) * 10) * 10)}`, 'aria-hidden': 'true' }),
        el('span', {}, `${v.count} (${Math.round((v.count / total) * 100)}%)`),
      ),
    ),
  );
  const v = versions.find((x) => x.version === chosen) ?? versions[0];
  const which = document.getElementById('which');
  if (!v) return replace(which, el('p', { class: 'muted' }, 'No boxes yet.'));
  replace(
    which,
    el('h3', {}, `Firmware ${v.version}: ${v.count} box${v.count === 1 ? '' : 'es'}`),
    el('ul', { class: 'box-list' }, ...v.boxes.map((b) => el('li', {}, el('a', { href: `${base}boxes/${encodeURIComponent(b.serial)}` }, b.serial), ` ${b.name}`))),
    v.count > v.boxes.length ? el('p', { class: 'muted' }, `… and ${v.count - v.boxes.length} more (filter the fleet by firmware to see them all).`) : null,
  );
}

function choose(version) {
  chosen = version;
  history.replaceState(null, '', `${location.pathname}?version=${encodeURIComponent(version)}`);
  refresh();
}

const refresh = live(load);
