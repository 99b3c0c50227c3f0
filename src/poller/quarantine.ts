/**
 * Gateway records set aside as invalid (a device-list record or a device's details that violate
 * the schema): each is logged once per serial while it stays bad, not once per cycle. The set of
 * serials logged is bounded, so a gateway inventing new serials cannot grow it without limit.
 */
import type { Logger } from '../log.js';

const MAX_REMEMBERED = 10_000;

export class RecordQuarantine {
  private readonly logged = new Set<string>();

  constructor(private readonly logger: Logger) {}

  /** Logs the record's problem unless this serial's problem was logged already. */
  report(endpoint: string, serial: string | null, problem: string): void {
    const key = `${endpoint}\u0000${serial ?? ''}\u0000${problem}`;
    if (this.logged.has(key)) return;
    if (this.logged.size >= MAX_REMEMBERED) this.logged.clear();
    this.logged.add(key);
    this.logger.warn({ endpoint, serial, problem }, 'invalid gateway record set aside (logged once per serial); the rest of the fleet is processed');
  }
}
