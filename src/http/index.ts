/** The daemon's read-only HTTP server: health, Prometheus metrics and the JSON API. */
export { startHttpServer, type HttpServerOptions, type HealthOptions, type RunningHttpServer } from './server.js';
export type { AlertsReader, BoxJson, HistoryJson } from './api.js';
export { evaluateHealth, type HealthBody, type HealthInput } from './health.js';
export { HttpError } from './errors.js';
export { parseListen } from './listen.js';
export { fleetSnapshot, type FleetSnapshot } from './snapshot.js';
