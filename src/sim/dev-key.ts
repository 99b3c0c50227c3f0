/**
 * The simulator's built-in account key (`boxwatch sim` without --key, and what `call`/`calls`
 * use against a simulator on this machine). On its own, so that the CLI can name it without
 * loading the simulator.
 */
export const DEV_KEY = 'boxwatch-dev-secret-key';
