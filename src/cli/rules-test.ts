/**
 * `boxwatch rules test FILE [--config FILE]`: runs the unit tests of a rule configuration (see
 * src/cli/rules-test-runner.ts and docs/cli-alerts.md) and prints one PASS/FAIL line per case, with
 * the missing and unexpected alerts under a failure. Exit 0 when all pass, 1 on any failure,
 * 2 when the test file (or the rules it names) is invalid.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { resolveConfigPath } from '../config/index.js';
import { BoxwatchError, ConfigError, errorMessage } from '../errors.js';
import { parseRulesTest, runRulesTests } from './rules-test-runner.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';

export const registerRulesTest: RegisterCommand = (program: Command, ctx: CliContext) => {
  const rules = program.command('rules').description('work with the alert rules');
  rules
    .command('test')
    .description('unit-test alert rules: box observations over time and the alerts expected at given times')
    .argument('<file>', 'rules test file (YAML; see config/rules.test.yaml)')
    .option('-c, --config <file>', 'take the rules from this configuration when the test file has neither rules nor rule_files')
    .action(async (file: string, opts: { config?: string }) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new ConfigError([{ path: 'file', message: `cannot read ${file}: ${errorMessage(err)}` }], file);
      }
      const suite = parseRulesTest(text, {
        source: file,
        env: ctx.env,
        readFile: (path) => readFileSync(path, 'utf8'),
        fallbackConfig: resolveConfigPath({ path: opts.config, env: ctx.env }),
      });
      const results = await runRulesTests(suite);
      for (const r of results) {
        ctx.out(`${r.pass ? 'PASS' : 'FAIL'}  ${terminalSafe(r.name)}\n`);
        for (const m of r.missing) ctx.out(`      missing:    ${terminalSafe(m)}\n`);
        for (const u of r.unexpected) ctx.out(`      unexpected: ${terminalSafe(u)}\n`);
      }
      const failed = results.filter((r) => !r.pass).length;
      ctx.out(`\n${results.length - failed} passed, ${failed} failed (rules from ${suite.rulesFrom.join(', ')})\n`);
      if (failed > 0) throw new BoxwatchError('rules_test_failed', `${failed} of ${results.length} test case(s) failed`);
    });
};
