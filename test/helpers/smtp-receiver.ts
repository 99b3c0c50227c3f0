/**
 * A real SMTP server for tests (smtp-server on 127.0.0.1, no TLS), which collects every message
 * parsed with mailparser. It can require a login, answer a chosen SMTP reply code, and be stopped
 * and started again on the same port (an outage).
 */
import { simpleParser } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope sender and recipients. */
  from: string;
  to: string[];
  subject: string;
  text: string;
  /** The HTML part, or '' when there is none. */
  html: string;
  headers: Map<string, unknown>;
  /** The login used, if any. */
  user: string | undefined;
}

export interface SmtpReceiverOptions {
  /** When set, a login with these credentials is required. */
  auth?: { user: string; pass: string };
  /** Listen on this port (default: a free one). */
  port?: number;
}

export interface SmtpReceiver {
  readonly port: number;
  /** `smtp://[user:pass@]127.0.0.1:PORT`; uses the configured credentials unless others are given. */
  url(credentials?: { user: string; pass: string }): string;
  readonly messages: ReceivedMail[];
  /** Resolves once `count` messages have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** Answers DATA with this reply code (e.g. 451 temporary, 550 permanent) until `accept()`. */
  rejectWith(code: number, text?: string): void;
  accept(): void;
  /** Stops listening (connections refused) until `start()`. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startSmtpReceiver(options: SmtpReceiverOptions = {}): Promise<SmtpReceiver> {
  const messages: ReceivedMail[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let rejection: { code: number; text: string } | undefined;
  let server: SMTPServer | undefined;
  let port = options.port ?? 0;

  const notify = (): void => {
    for (const w of [...waiters]) {
      if (messages.length >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const serverOptions: SMTPServerOptions = {
    secure: false,
    disabledCommands: options.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !options.auth,
    allowInsecureAuth: true,
    closeTimeout: 500,
    logger: false,
    onAuth(auth, _session, callback) {
      if (options.auth && auth.username === options.auth.user && auth.password === options.auth.pass) {
        callback(null, { user: auth.username });
      } else {
        callback(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }));
      }
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (rejection) {
          callback(Object.assign(new Error(rejection.text), { responseCode: rejection.code }));
          return;
        }
        simpleParser(Buffer.concat(chunks))
          .then((mail) => {
            messages.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
              subject: mail.subject ?? '',
              text: mail.text ?? '',
              html: typeof mail.html === 'string' ? mail.html : '',
              headers: mail.headers,
              user: typeof session.user === 'string' ? session.user : undefined,
            });
            callback();
            notify();
          })
          .catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err))));
      });
    },
  };

  const start = async (): Promise<void> => {
    const s = new SMTPServer(serverOptions);
    s.on('error', () => {
      // client disconnects mid-session are normal in outage tests
    });
    await new Promise<void>((resolve, reject) => {
      s.server.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.server.off('error', reject);
        resolve();
      });
    });
    port = (s.server.address() as AddressInfo).port;
    server = s;
  };

  const stop = async (): Promise<void> => {
    const s = server;
    server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await start();

  return {
    get port() {
      return port;
    },
    url(credentials = options.auth) {
      const auth = credentials ? `${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.pass)}@` : '';
      return `smtp://${auth}127.0.0.1:${port}`;
    },
    messages,
    waitFor(count, timeoutMs = 5_000) {
      if (messages.length >= count) return Promise.resolve(messages.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`SMTP receiver: expected ${count} messages, got ${messages.length} within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(messages.slice());
          },
        };
        waiters.push(waiter);
      });
    },
    rejectWith(code, text = code >= 500 ? 'Message rejected' : 'Try again later') {
      rejection = { code, text };
    },
    accept() {
      rejection = undefined;
    },
    stop,
    start,
    close: stop,
  };
}
