/** The problems of an invalid configuration as "path: message" lines (fails the test if the text is valid). */
import { expect } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';

export function configProblems(text: string, env: Record<string, string>): string[] {
  try {
    parseConfig(text, env, 'test.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected the configuration to be invalid');
}
