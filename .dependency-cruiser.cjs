/**
 * The layers of src/ (docs/architecture.md, "Layers"), checked by `npm run lint`.
 *
 * A module may import modules of its own layer or of a layer below it, never above; and no
 * import cycle, within a folder or across folders. Layers are named by folder, so a new file
 * falls into its folder's layer without touching this file.
 */

/** From the bottom up. `paths` are regular expressions on the path from the repository root. */
const LAYERS = [
  {
    name: 'leaf',
    comment: 'helpers (time, text, durations, globs, errors, the clock, box ids, words, YAML, cron, templates): import only other helpers',
    paths: ['^src/[^/]+[.]ts$'],
    // The top-level files that are not helpers: app.ts (and app-*.ts), main.ts, metrics.ts, in the layers above.
    except: ['^src/(app|app-[a-z-]+|main|metrics)[.]ts$'],
  },
  {
    name: 'domain',
    comment: 'what boxwatch knows and decides, pure: box and call values, the configuration, the rules, the alert core, the repositories\' interfaces',
    paths: ['^src/(domain|config|rules|alerts)/'],
  },
  {
    name: 'store',
    comment: 'SQLite and PostgreSQL behind the domain\'s repository interfaces',
    paths: ['^src/store/'],
  },
  {
    name: 'stage',
    comment: 'the daemon\'s stages: poll, gateway client, calls, archive, delivery, replicas, views, metrics',
    paths: ['^src/(poller|gateway|calls|archive|notify|cluster|views)/', '^src/metrics[.]ts$'],
  },
  {
    name: 'edge',
    comment: 'the adapters users reach: the HTTP API and dashboard (served by the daemon), export and the simulator (run by the CLI)',
    paths: ['^src/(http|web|export|sim)/'],
  },
  {
    // Above the HTTP edge, not below it: the composition root wires everything it composes, the
    // daemon's HTTP server included, and nothing but the CLI imports it.
    name: 'app',
    comment: 'the composition root (app.ts, and app-*.ts beside it): wires the stages, the store and the HTTP server',
    paths: ['^src/(app|app-[a-z-]+)[.]ts$'],
  },
  {
    name: 'cli',
    comment: 'one file per command',
    paths: ['^src/cli/'],
  },
  {
    name: 'main',
    comment: 'the executable: process I/O and signals',
    paths: ['^src/main[.]ts$'],
  },
];

const above = (index) => LAYERS.slice(index + 1).flatMap((layer) => layer.paths);
const layered = LAYERS.flatMap((layer) => layer.paths);

/** Upward imports: from a layer to any layer above it. */
const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${layer.name}`,
  severity: 'error',
  comment: `${layer.name}: ${layer.comment}; nothing above it`,
  from: { path: layer.paths, ...(layer.except ? { pathNot: layer.except } : {}) },
  to: { path: above(index) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import cycle: one of its imports goes the wrong way',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      severity: 'error',
      comment: 'folders that import each other: they are one module, or one of the imports goes the wrong way',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...upward,
    {
      name: 'unlayered',
      severity: 'error',
      comment: 'a folder of src/ in no layer: add it to one here and in docs/architecture.md',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: layered },
    },
    {
      name: 'unlayered-imports',
      severity: 'error',
      comment: 'a folder of src/ in no layer imports from src/: add it to a layer here and in docs/architecture.md',
      from: { path: '^src/', pathNot: layered },
      to: { path: '^src/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    // Type-only imports are dependencies too: an interface imported from above is an upward arrow.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
