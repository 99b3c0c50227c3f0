/** Every command of the CLI, in the order `--help` lists them. One file per command. */
import type { RegisterCommand } from './context.js';
import { registerSim } from './sim.js';
import { registerCall } from './call.js';
import { registerCalls } from './calls.js';
import { registerTestCall } from './test-call.js';
import { registerCheckConfig } from './check-config.js';
import { registerRun } from './run.js';
import { registerDemo } from './demo.js';
import { registerStatus } from './status.js';
import { registerHistory } from './history.js';
import { registerUptime } from './uptime.js';
import { registerAlerts } from './alerts.js';
import { registerNotifications } from './notifications.js';
import { registerSilence } from './silence.js';
import { registerAck } from './ack.js';
import { registerBox } from './box.js';
import { registerRulesTest } from './rules-test.js';
import { registerNotifyTest } from './notify-test.js';
import { registerBackup } from './backup.js';
import { registerInit } from './init.js';
import { registerSql } from './sql.js';
import { registerExport } from './export.js';
import { registerRecordings } from './recordings.js';
import { registerMigrate } from './migrate.js';

export const allCommands: RegisterCommand[] = [registerDemo, registerInit, registerSim, registerCall, registerCalls, registerRecordings, registerTestCall, registerCheckConfig, registerRun, registerStatus, registerHistory, registerUptime, registerAlerts, registerNotifications, registerSilence, registerAck, registerBox, registerRulesTest, registerNotifyTest, registerBackup, registerMigrate, registerSql, registerExport];
