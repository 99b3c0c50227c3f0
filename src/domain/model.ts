/**
 * What boxwatch knows about a box at one moment, merged from the device list (summary) and the
 * device details. Times are milliseconds since the epoch. Fields that only details carry are null
 * until the first details fetch.
 */
export interface BoxSnapshot {
  serial: string;
  id: number;
  name: string;
  connected: boolean;
  /** Percent; null when the gateway reports none (e.g. disconnected). */
  battery: number | null;
  /** dBm; null until details were fetched. */
  signal: number | null;
  firmware: string;
  /** The box's last activity, on boxwatch's clock (the poller corrects the gateway's clock skew). */
  lastSeen: number;
  registeredAt: number | null;
  location: string | null;
  ip: string | null;
  /** When details were last fetched for this box; null if never. */
  detailsAt: number | null;
}
