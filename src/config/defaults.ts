/**
 * Built-in configurations: every default (`defaultConfig`) and the demo's configuration
 * (`demoConfig`, the same text as config/demo.yaml; a test keeps the two identical).
 */
import { parseConfig, validateConfig } from './load.js';
import type { Config } from './schema.js';

/** The text of config/demo.yaml, embedded so that `boxwatch demo` needs no file. */
export const DEMO_CONFIG_YAML = `# boxwatch demo configuration: the local Gateway API simulator, console notifier only.
#
#   boxwatch sim --scenario config/scenarios/demo.yaml &
#   boxwatch run --config config/demo.yaml
#
# (\`boxwatch demo\` does both in one process with this same configuration built in.)
# The simulator runs 60x faster than real time, and its clock (the HTTP Date header and
# last_seen) is simulated time: \`max_age: 15m\` on the stale rule is 15 real seconds.
# Every other duration here is real time.

gateway:
  base_url: http://127.0.0.1:8080
  # The simulator's documented development key: not a secret. Real deployments use
  # secret_key: \${BOXWATCH_SECRET_KEY}
  secret_key: boxwatch-dev-secret-key
  timeout: 5s
  concurrency: 8

poll:
  schedule: "*/2 * * * * *"   # every 2 seconds
  details_every: 10s

calls:
  schedule: "*/2 * * * * *"   # read the call list every 2 seconds too
  safety_window: 10m          # (simulated: about 10 real seconds of calls)

storage:
  path: ./data/demo.db
  raw_retention: 14d
  rollup_retention: 400d

rules:
  - { name: box-offline, kind: disconnected, for: 4s, severity: critical }
  - { name: battery-low, kind: low_battery, below: 20, clear_above: 25, severity: warning }
  - { name: signal-weak, kind: weak_signal, below_dbm: -112, for: 10s, severity: warning }
  - { name: box-stale, kind: stale, max_age: 15m, severity: warning }
  - { name: firmware, kind: firmware_drift, expected: majority, severity: info }
  - { name: box-missing, kind: missing, severity: warning }
  # Call rules measure on the gateway's clock (call times are its own): simulated time here.
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 5, above: 50, clear_below: 20, severity: warning }
  - { name: call-stuck, kind: call_stuck, max_duration: 30m, severity: warning }

alerting:
  repeat_interval: 1h
  group_wait: 2s
  inhibit: true
  gateway:
    unreachable_after: 3

notifiers:
  - { name: console, type: console }

# The dashboard; \`boxwatch demo\` prints its address and picks another port if this one is taken.
http:
  listen: 127.0.0.1:9464

log:
  level: warn
`;

/** Every default, with the given account key (tests; a base to override in code). */
export function defaultConfig(secretKey: string): Config {
  // Escaped so that the key is taken literally, never interpolated.
  return validateConfig({ gateway: { secret_key: secretKey.replaceAll('${', () => '$${') } }, {}, 'default configuration');
}

/**
 * The demo configuration (simulator dev key, console notifier, database ./data/demo.db).
 * `overrides.baseUrl` points it at an in-process simulator on another port.
 */
export function demoConfig(overrides: { baseUrl?: string; storagePath?: string; listen?: string; adminToken?: string } = {}): Config {
  const config = parseConfig(DEMO_CONFIG_YAML, {}, 'demo configuration');
  return {
    ...config,
    http: { ...config.http, listen: overrides.listen ?? config.http.listen, adminToken: overrides.adminToken ?? config.http.adminToken },
    gateway: { ...config.gateway, baseUrl: overrides.baseUrl ?? config.gateway.baseUrl },
    gateways: config.gateways.map((a) => ({ ...a, baseUrl: overrides.baseUrl ?? a.baseUrl })),
    storage: { ...config.storage, path: overrides.storagePath ?? config.storage.path },
  };
}
