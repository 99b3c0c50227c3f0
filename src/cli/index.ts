/**
 * Every command of the CLI, in the order `--help` lists them. One file per command, loaded only
 * when needed: `boxwatch run` loads the daemon's modules, not every other command's (about 30 ms
 * of CPU and 25 modules less at the daemon's start: BENCHMARKS.md, tenth pass).
 */
import type { RegisterCommand } from './context.js';

interface CommandModule {
  /** The command's name as typed: the one its module gives `program.command()`. */
  name: string;
  load(): Promise<RegisterCommand>;
}

export const commandModules: readonly CommandModule[] = [
  { name: 'demo', load: async () => (await import('./demo.js')).registerDemo },
  { name: 'init', load: async () => (await import('./init.js')).registerInit },
  { name: 'sim', load: async () => (await import('./sim.js')).registerSim },
  { name: 'call', load: async () => (await import('./call.js')).registerCall },
  { name: 'calls', load: async () => (await import('./calls.js')).registerCalls },
  { name: 'recordings', load: async () => (await import('./recordings.js')).registerRecordings },
  { name: 'test-call', load: async () => (await import('./test-call.js')).registerTestCall },
  { name: 'check-config', load: async () => (await import('./check-config.js')).registerCheckConfig },
  { name: 'run', load: async () => (await import('./run.js')).registerRun },
  { name: 'status', load: async () => (await import('./status.js')).registerStatus },
  { name: 'history', load: async () => (await import('./history.js')).registerHistory },
  { name: 'uptime', load: async () => (await import('./uptime.js')).registerUptime },
  { name: 'alerts', load: async () => (await import('./alerts.js')).registerAlerts },
  { name: 'notifications', load: async () => (await import('./notifications.js')).registerNotifications },
  { name: 'silence', load: async () => (await import('./silence.js')).registerSilence },
  { name: 'ack', load: async () => (await import('./ack.js')).registerAck },
  { name: 'box', load: async () => (await import('./box.js')).registerBox },
  { name: 'rules', load: async () => (await import('./rules-test.js')).registerRulesTest },
  { name: 'notify-test', load: async () => (await import('./notify-test.js')).registerNotifyTest },
  { name: 'backup', load: async () => (await import('./backup.js')).registerBackup },
  { name: 'migrate', load: async () => (await import('./migrate.js')).registerMigrate },
  { name: 'sql', load: async () => (await import('./sql.js')).registerSql },
  { name: 'export', load: async () => (await import('./export.js')).registerExport },
];

/**
 * The commands `argv` needs: the one its first word names; all of them, in order, when it names
 * none (`--help`, `--version`, `help run`, a mistyped command and its suggestion).
 */
export async function loadCommands(argv: readonly string[] = []): Promise<RegisterCommand[]> {
  const named = commandModules.find((c) => c.name === argv[0]);
  return Promise.all((named === undefined ? commandModules : [named]).map((c) => c.load()));
}
