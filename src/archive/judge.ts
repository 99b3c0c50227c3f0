/**
 * Which account's cycles judge the archive's `archive_failing` rule, and the facts every account's
 * cycle judges its call and archive rules with.
 */
import type { CallFacts } from '../rules/facts.js';
import type { RuleConfig } from '../config/schema.js';
import { rulesOfAccount } from '../rules/index.js';
import { archiveFactsFor, withArchiveFacts, type ArchiveRuleFacts } from '../rules/facts.js';

/**
 * The account in whose cycles this process judges its archive's `archive_failing` rule: the
 * first configured account it works for (replicas: leads now) that the rule applies to. One
 * archive failure is one alert, under that account's fleet key, not one per account. Replicas
 * each have their own archive (docs/operations.md), so each replica's failure is its own alert,
 * under the first account it leads.
 */
export function archiveJudge(rules: readonly RuleConfig[], accounts: readonly string[], holds: (account: string) => boolean): (rule: string) => string | undefined {
  return (ruleName) => {
    const rule = rules.find((r) => r.name === ruleName);
    return accounts.find((name) => holds(name) && rule !== undefined && rulesOfAccount([rule], name).length > 0);
  };
}

/** Per account, its call rules' facts with the archive rules' facts as that account's cycle judges them. */
export function callAndArchiveFacts(o: {
  calls: (account: string) => CallFacts | null;
  archive: () => { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null;
  judge: (rule: string) => string | undefined;
}): (account: string) => CallFacts | null {
  return (account) => withArchiveFacts(o.calls(account), archiveFactsFor(o.archive(), (rule) => o.judge(rule) === account));
}
