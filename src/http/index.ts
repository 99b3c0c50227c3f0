/** The daemon's read-only HTTP server: health, Prometheus metrics and the JSON API. */
export { startHttpServer, type HttpServerOptions, type HealthOptions, type RunningHttpServer } from './server.js';
export type { AlertsReader, BoxJson } from './api.js';
export type { HistoryJson } from '../views/history.js';
export { evaluateHealth, type HealthBody, type HealthInput } from './health.js';
export { HttpError } from './errors.js';
export { parseListen } from './listen.js';
export { fleetSnapshot, type FleetSnapshot } from './snapshot.js';
