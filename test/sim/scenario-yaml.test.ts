/** Scenario files are read by the one YAML reader: duplicate keys are errors, with line numbers. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseScenario } from '../../src/sim/scenario.js';

describe('scenario YAML', () => {
  it('a duplicate key is an error naming its line, not a silently dropped event', () => {
    let error: unknown;
    try {
      parseScenario('timeline:\n  - { at: 0s, box: "BX-*", connect: true }\ntimeline:\n  - { at: 1m, box: BX-00001, disconnect: true }\n', 'demo.yaml');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/demo\.yaml[\s\S]*line 3, column 1[\s\S]*unique/i);
  });

  it('a syntax error names its line and column', () => {
    expect(() => parseScenario('timeline:\n  - { at: 0s, box: "BX-*"\n', 'bad.yaml')).toThrow(/line \d+, column \d+/);
  });
});
