// One day of an uptime bar: height and colour by connected fraction, the figure in its title.
import { el, pct } from './common.js';

export function dayBar(t, f) {
  const day = new Date(t).toISOString().slice(0, 10);
  const cls = f === null ? 'none' : f >= 0.999 ? 'good' : f >= 0.9 ? 'part' : 'bad';
  const h = f === null ? 100 : Math.max(0, Math.round(f * 10) * 10);
  return el('span', { class: `day day-${cls} h${h}`, title: `${day}: ${f === null ? 'no data' : `${pct(f)} connected`}` });
}
