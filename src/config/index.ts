/** Configuration: schema and types, loading and validation, printing with secrets redacted. */
export * from './schema.js';
export { DEFAULT_CONFIG_PATH, loadConfig, parseConfig, resolveConfigPath, validateConfig, type LoadConfigOptions } from './load.js';
export { REDACTED, durationText, formatConfig, redactConfig, redactUrl } from './print.js';
export { DEMO_CONFIG_YAML, defaultConfig, demoConfig } from './defaults.js';
export type { Env } from './interpolate.js';
