/**
 * A real HTTP receiver for Slack incoming webhooks: the generic receiver (http-receiver.ts) on a
 * path that looks like Slack's secret path, answering `ok` like Slack and 404 `no_service` to
 * anything else.
 */
import { startHttpReceiver, type HttpReceiver } from './http-receiver.js';

export type { ReceivedWebhook, ReceiverResponse as SlackResponse } from './http-receiver.js';
export type SlackReceiver = HttpReceiver;

export const SLACK_TEST_PATH = '/services/T0000TEST/B0000TEST/s3cr3tW3bh00kT0k3n';

export async function startSlackReceiver(options: { port?: number } = {}): Promise<SlackReceiver> {
  return startHttpReceiver({ port: options.port, path: SLACK_TEST_PATH, ok: { status: 200, body: 'ok' }, notFound: { status: 404, body: 'no_service' }, name: 'Slack' });
}
