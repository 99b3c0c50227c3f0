/**
 * Several vendor accounts in one simulator (docs/simulator.md, "Several accounts"): one Simulator
 * per account, each with its own key, fleet (serial prefix, seed), call book, scenario and faults,
 * all on the same clock and speed. The HTTP server (server.ts) answers a request from the account
 * its `account-secret-key` names. One account (the default) is exactly the single simulator.
 */
import { systemClock } from '../clock.js';
import type { Scenario } from './scenario.js';
import { SIM_DEFAULTS, Simulator, type SimulatorOptions } from './simulator.js';
import type { TrafficOptions } from './traffic.js';
import { DEV_KEY } from './dev-key.js';

/** What one account may set for itself; the rest comes from the simulator's options. */
export interface SimAccountOptions {
  /** Default: `<key>-<n>` (n from 1) when there are several accounts, else the key. */
  key?: string;
  /** Default: the simulator's `devices`, else this account's scenario's, else account 1's. */
  devices?: number;
  /** Default: the simulator's seed + n - 1 (each account its own fleet). */
  seed?: number;
  /** Default: `BX-` for one account or shared serials, else `BXnn-` (`BX01-`, `BX02-`, ...). */
  serialPrefix?: string;
  /** Default: the simulator's scenario for account 1, none for the others. */
  scenario?: Scenario;
  calls?: TrafficOptions;
}

export interface SimAccountsOptions extends SimulatorOptions {
  /** How many accounts (keys `<key>-1`, `<key>-2`, ...), or each account's own options. Default 1. */
  accounts?: number | readonly SimAccountOptions[];
  /** Every account's serials start with `BX-`, so the same serial exists in several accounts. */
  sharedSerials?: boolean;
}

/** One simulated account. */
export interface SimAccount {
  /** 1, 2, ... */
  index: number;
  key: string;
  /** What its serials start with. */
  serialPrefix: string;
  sim: Simulator;
}

/** The accounts of a simulator, in order; the first is the simulator of a one-account run. */
export function createAccounts(options: SimAccountsOptions = {}): SimAccount[] {
  const { accounts = 1, sharedSerials = false, scenario, ...base } = options;
  const list: readonly SimAccountOptions[] = typeof accounts === 'number' ? Array.from({ length: accounts }, () => ({})) : accounts;
  if (list.length === 0) throw new RangeError('a simulator has at least one account');
  const several = list.length > 1;
  const baseKey = base.key ?? DEV_KEY;
  // What the first account's scenario sets as defaults holds for every account (one clock).
  const seed = base.seed ?? scenario?.seed ?? SIM_DEFAULTS.seed;
  const speed = base.speed ?? scenario?.speed ?? SIM_DEFAULTS.speed;
  const start = base.start ?? (base.clock ?? systemClock).now();
  return list.map((own, i) => {
    const index = i + 1;
    const key = own.key ?? (several ? `${baseKey}-${index}` : baseKey);
    const serialPrefix = own.serialPrefix ?? (several && !sharedSerials ? `BX${String(index).padStart(2, '0')}-` : 'BX-');
    const ownScenario = own.scenario ?? (index === 1 ? scenario : undefined);
    const sim = new Simulator({
      ...base,
      key,
      seed: own.seed ?? seed + i,
      speed,
      start,
      devices: own.devices ?? base.devices ?? own.scenario?.devices ?? scenario?.devices ?? SIM_DEFAULTS.devices,
      serialPrefix,
      ...(own.calls !== undefined && { calls: own.calls }),
      ...(ownScenario !== undefined && { scenario: ownScenario }),
    });
    return { index, key, serialPrefix, sim };
  });
}
