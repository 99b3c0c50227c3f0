/**
 * The dashboard's HTML, rendered by the server: a skeleton per page (header with gateway health
 * and navigation, the page's empty regions, the footer naming the time zone) that the page's
 * script fills from the JSON API. Every piece of text that comes from outside (box serials in the
 * path, gateway error codes) goes through `escapeHtml`; there is no inline script or style, so the
 * Content-Security-Policy can forbid both.
 */
import { escapeHtml } from '../text.js';

export type PageName = 'overview' | 'box' | 'uptime' | 'firmware' | 'alerts' | 'silences';

export interface PageContext {
  /** The path prefix, starting and ending with `/` (`http.base_path`). */
  base: string;
  /** The assets' version segment (see assets.ts). */
  assets: string;
  /** The gateway line for the header, already plain text (escaped here). */
  gateway: { text: string; state: 'ok' | 'failing' | 'unknown' };
}


const NAV: readonly { page: PageName; path: string; label: string }[] = [
  { page: 'overview', path: '', label: 'Fleet' },
  { page: 'uptime', path: 'uptime', label: 'Uptime' },
  { page: 'firmware', path: 'firmware', label: 'Firmware' },
  { page: 'alerts', path: 'alerts', label: 'Alerts' },
  { page: 'silences', path: 'silences', label: 'Silences' },
];

function layout(ctx: PageContext, page: PageName, title: string, main: string, data: Record<string, string> = {}): string {
  const a = `${ctx.base}assets/${ctx.assets}/`;
  const attrs = Object.entries({ page, ...data })
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  const nav = NAV.map(
    (n) => `<a href="${escapeHtml(ctx.base + n.path)}"${n.page === page || (page === 'box' && n.page === 'overview') ? ' aria-current="page"' : ''}>${n.label}</a>`,
  ).join('');
  return `<!doctype html>
<html lang="en" data-base="${escapeHtml(ctx.base)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · boxwatch</title>
<link rel="icon" href="${a}favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${a}vendor/uPlot.min.css">
<link rel="stylesheet" href="${a}style.css">
<script type="module" src="${a}${page}.js"></script>
</head>
<body${attrs}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="${escapeHtml(ctx.base)}">boxwatch</a>
<nav aria-label="Pages">${nav}</nav>
<p id="gateway" class="gateway" data-state="${ctx.gateway.state}" role="status" aria-live="polite">${escapeHtml(ctx.gateway.text)}</p>
</header>
<main id="main" tabindex="-1">
${main}
</main>
<footer>
<p>Times are shown in <span id="zone">your time zone</span>; hover a time for UTC. <span id="live" role="status">Live updates: connecting…</span></p>
</footer>
</body>
</html>
`;
}

const FILTERS = `<form id="filters" class="filters" role="search" aria-label="Filter boxes">
<label id="account-filter" hidden>Account <select name="account"><option value="">any</option></select></label>
<label>State <select name="state"><option value="">any</option><option>online</option><option>offline</option><option>stale</option><option>missing</option><option value="alerting">alerting</option></select></label>
<label>Severity <select name="severity"><option value="">any</option><option>critical</option><option>warning</option><option>info</option></select></label>
<label>Rule <select name="rule"><option value="">any</option></select></label>
<label>Firmware <select name="firmware"><option value="">any</option></select></label>
<label>Location <input name="location" type="search" autocomplete="off"></label>
<label>Search <input name="q" type="search" placeholder="serial or name" autocomplete="off"></label>
<button type="reset">Clear</button>
</form>`;

export function overviewPage(ctx: PageContext): string {
  return layout(
    ctx,
    'overview',
    'Fleet',
    `<h1>Fleet</h1>
<section aria-label="Counts"><ul id="counts" class="counts"></ul></section>
${FILTERS}
<p id="summary" class="summary" role="status"></p>
<div class="table-wrap"><table id="boxes" class="boxes">
<caption class="visually-hidden">Boxes, in trouble first</caption>
<thead><tr><th scope="col">State</th><th scope="col">Box</th><th scope="col">Battery</th><th scope="col">Signal</th><th scope="col">Firmware</th><th scope="col">Last seen</th><th scope="col">Location</th><th scope="col">Open alerts</th></tr></thead>
<tbody></tbody>
</table></div>
<nav id="pager" class="pager" aria-label="Pages of boxes"></nav>
${REPLICAS}`,
  );
}

/** Replicas (`cluster:`): who serves each account; filled and shown by overview.js from /api/cluster. */
const REPLICAS = `<section id="replicas" class="replicas" aria-labelledby="replicas-h" hidden>
<h2 id="replicas-h">Replicas</h2>
<p id="replicas-self" class="note"></p>
<div class="table-wrap"><table id="servers">
<caption class="visually-hidden">Which replica serves each account</caption>
<thead><tr><th scope="col">Account</th><th scope="col">Served by</th><th scope="col">Host</th><th scope="col">Heartbeat</th><th scope="col">Lease until</th></tr></thead>
<tbody></tbody>
</table></div>
</section>`;

/** `calls`: calls are read (`calls:`), so the page charts the box's call failures. */
export function boxPage(ctx: PageContext, serial: string, options: { calls?: boolean } = {}): string {
  return layout(
    ctx,
    'box',
    serial,
    `<p class="crumbs"><a href="${escapeHtml(ctx.base)}">Fleet</a> › <span>${escapeHtml(serial)}</span></p>
<h1 id="title">${escapeHtml(serial)}</h1>
<dl id="details" class="details"></dl>
<section aria-labelledby="charts-h">
<h2 id="charts-h">History</h2>
<form id="range" class="range" aria-label="Time range">
<fieldset><legend>Range</legend>
<label><input type="radio" name="since" value="1h"> 1 h</label>
<label><input type="radio" name="since" value="24h" checked> 24 h</label>
<label><input type="radio" name="since" value="7d"> 7 d</label>
<label><input type="radio" name="since" value="30d"> 30 d</label>
<label><input type="radio" name="since" value="90d"> 90 d</label>
<label><input type="radio" name="since" value="custom"> custom</label>
<label>from <input type="datetime-local" name="from"></label>
<label>to <input type="datetime-local" name="to"></label>
<button type="submit">Show</button>
</fieldset>
</form>
<p id="range-note" class="note" role="status"></p>
<div id="charts" class="charts"></div>
<ul id="legend" class="legend"></ul>
</section>
<section aria-labelledby="uptime-h">
<h2 id="uptime-h">Uptime, last 90 days</h2>
<div id="uptime" class="uptime-bar" role="img"></div>
</section>
<section aria-labelledby="timeline-h">
<h2 id="timeline-h">Alert timeline</h2>
<ol id="timeline" class="timeline"></ol>
</section>`,
    { serial, ...(options.calls === true && { calls: 'on' }) },
  );
}

export function uptimePage(ctx: PageContext): string {
  return layout(
    ctx,
    'uptime',
    'Uptime',
    `<h1>Uptime</h1>
<form id="days" class="range" aria-label="Days"><fieldset><legend>Days</legend>
<label><input type="radio" name="days" value="30"> 30 days</label>
<label><input type="radio" name="days" value="90" checked> 90 days</label>
</fieldset></form>
<section aria-labelledby="fleet-h"><h2 id="fleet-h">Fleet online</h2><div id="fleet-chart" class="chart"></div></section>
<section aria-labelledby="boxes-h"><h2 id="boxes-h">Per box</h2>
<p class="note">Each bar is one day (UTC): green all day connected, amber partly, red mostly disconnected, hatched no data.</p>
<ul id="bars" class="bars"></ul>
<nav id="pager" class="pager" aria-label="Pages of boxes"></nav></section>`,
  );
}

export function firmwarePage(ctx: PageContext): string {
  return layout(
    ctx,
    'firmware',
    'Firmware',
    `<h1>Firmware</h1>
<ul id="versions" class="versions"></ul>
<section aria-labelledby="which-h"><h2 id="which-h">Boxes</h2><div id="which"></div></section>`,
  );
}

export function alertsPage(ctx: PageContext, writable = false): string {
  return layout(
    ctx,
    'alerts',
    'Alerts',
    `<h1>Alerts</h1>
<form id="alert-filter" class="range" aria-label="Which alerts"><fieldset><legend>Show</legend>
<label><input type="radio" name="show" value="active" checked> active</label>
<label><input type="radio" name="show" value="24h"> last 24 h</label>
<label><input type="radio" name="show" value="7d"> last 7 d</label>
</fieldset></form>
<div id="alerts" class="alerts"></div>`,
    { writable: String(writable) },
  );
}

export function silencesPage(ctx: PageContext, writable: boolean): string {
  const form = writable
    ? `<form id="silence-form" class="silence-form" aria-labelledby="new-h">
<h2 id="new-h">New silence</h2>
<label>Boxes (serial globs, comma separated) <input name="boxes" placeholder="BX-0000*" autocomplete="off"></label>
<label>Rules (names or globs, comma separated) <input name="rules" placeholder="battery-low" autocomplete="off"></label>
<label>For <input name="for" value="2h" required></label>
<label>Comment <input name="comment" required autocomplete="off"></label>
<div id="preview" class="preview" role="status" aria-live="polite"></div>
<button type="submit">Create silence</button>
<p id="form-result" role="status"></p>
</form>`
    : `<section class="notice" aria-labelledby="new-h"><h2 id="new-h">Creating silences is turned off</h2>
<p>To create and expire silences from this page, give the daemon an admin token: set
<code>http.admin_token: \${BOXWATCH_ADMIN_TOKEN}</code> in the configuration, start it with the
environment variable <code>BOXWATCH_ADMIN_TOKEN</code> set to a long random value, and enter that
value here when asked. Until then use <code>boxwatch silence add</code>.</p></section>`;
  return layout(
    ctx,
    'silences',
    'Silences',
    `<h1>Silences</h1>
${form}
<section aria-labelledby="list-h"><h2 id="list-h">Silences</h2>
<label><input type="checkbox" id="show-expired"> show expired</label>
<div id="silences"></div></section>`,
    { writable: String(writable) },
  );
}
