/**
 * The notification model: what the alert engine puts in the outbox and what every channel renders.
 * Plain data only (JSON-serialisable, times in milliseconds since the epoch), so that one message is
 * one JSON column of an outbox row and survives restarts unchanged.
 */

import type { Severity } from '../vocabulary.js';

export type { Severity } from '../vocabulary.js';

/** `repeat`: still firing, re-notified after `repeat_interval`. */
export type ItemStatus = 'firing' | 'resolved' | 'repeat';

/** One alert in a message. A grouped message (a site power cut) carries many. */
export interface AlertItem {
  status: ItemStatus;
  /** Rule name from the configuration (`box-offline`). */
  rule: string;
  /** Rule kind (`disconnected`, `low_battery`, `gateway_unreachable`, ...). */
  ruleKind: string;
  severity: Severity;
  /** Box serial; '' for gateway-level alerts. */
  serial: string;
  /** Box name and location as the gateway reports them: untrusted text, escaped where rendered. */
  boxName?: string | null;
  location?: string | null;
  /** Current value (battery percent, dBm, firmware version, age); null = unknown. */
  value?: string | number | null;
  /** The threshold, as people read it (`below 20`, `2.10.0`). */
  threshold?: string | number | null;
  /** When the alert started firing. */
  since: number;
  /** When it resolved (status `resolved`). */
  resolvedAt?: number | null;
  /** Short lower-case phrase for subjects and lines: `disconnected`, `battery 12% below 20%`. */
  summary: string;
  /** Set when a silence held this notification back until then (it is sent because the silence ended). */
  silencedUntil?: number | null;
  /** Set when someone acknowledged the alert (`boxwatch ack`). */
  ack?: AckInfo | null;
}

/** An acknowledgement of an alert: who, why, when, and until when (null: until it resolves). */
export interface AckInfo {
  by: string;
  comment: string;
  at: number;
  until: number | null;
}

/** "Notifications to `notifier` are failing": sent by the dispatcher on the other notifiers. */
export interface DeliveryFailure {
  notifier: string;
  /** Creation time of the oldest message that could not be delivered. */
  failingSince: number;
  /** How many messages were given up (marked dead). */
  dead: number;
  /** The last error, already free of secrets (a NotifyError message). */
  lastError: string;
}

export type MessageKind = 'alert' | 'test' | 'delivery_failure';

export interface NotificationMessage {
  kind: MessageKind;
  /** Alert items (kind `alert`); empty for the other kinds. */
  items: AlertItem[];
  /** Kind `delivery_failure`: one entry per failing notifier. */
  failures?: DeliveryFailure[];
  /** When the message was built (the reference for "for 5m" in texts). */
  createdAt: number;
  /** Who sends it (instance or host name), shown in test messages and footers. */
  source?: string;
}

export type NotifierType = 'email' | 'slack' | 'console' | 'webhook' | 'alertmanager' | 'pagerduty' | 'teams' | 'ntfy' | 'telegram';

/** A delivery channel. Channels do not retry: the dispatcher does. */
export interface Notifier {
  readonly name: string;
  readonly type: NotifierType;
  /**
   * Set by channels whose receiver forgets a firing alert unless it hears of it again
   * (Alertmanager): the app sends them the firing alerts this often (src/notify/resend.ts).
   */
  readonly resendIntervalMs?: number;
  /** Delivers one message; rejects with a NotifyError (retryable or not). */
  send(message: NotificationMessage, signal?: AbortSignal): Promise<void>;
  /**
   * What `send` would deliver for this message, without sending (`notify-test --render`): one
   * entry per request (its body) or per e-mail (subject and text). The same builders as `send`.
   */
  preview?(message: NotificationMessage): string[];
  /** Releases connections. */
  close?(): Promise<void>;
}
