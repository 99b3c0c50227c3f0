/** Configuration: schema and types, loading and validation, printing with secrets redacted. */
export * from './schema.js';
export {
  DEFAULT_CONFIG_PATH,
  STORE_SECTIONS,
  firstSteps,
  loadConfig,
  parseConfig,
  resolveConfigPath,
  validateConfig,
  validateConfigSections,
  type ConfigSection,
  type LoadConfigOptions,
  type LoadedConfig,
} from './load.js';
export { durationText, formatConfig, redactConfig } from './print.js';
export { REDACTED, redactUrl } from '../redact.js';
export { DEMO_CONFIG_YAML, defaultConfig, demoConfig } from './defaults.js';
export type { Env, UnsetVariable } from './interpolate.js';
