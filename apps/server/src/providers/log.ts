/**
 * The default providers: nothing leaves the machine. Each message is written to the server's log
 * (an SMS with its auth code masked, a push with its title, body and data), the delivery is
 * recorded with the response `logged, not sent`, and the console shows it as "Logged, not sent".
 * The SMS's number reaches the log as every phone number does: masked by the logger's own hook to
 * its country code and last three digits (`+44•••••••456`; src/logging.ts, maskPhonesInLogLine),
 * which also covers a number in a push's text.
 */
import type { PushMessage, PushProvider, SendResult, SmsMessage, SmsProvider } from './types.js';

/** The slice of a pino/Fastify logger the log providers use. */
export interface ProviderLogger {
  info(object: Record<string, unknown>, message: string): void;
}

export const LOGGED_RESPONSE = 'logged, not sent';

/** What the log holds when the message came without its masked text. */
export const UNMASKED_TEXT = '(not logged: no masked text came with it, and the text holds the code)';

export function createLogSmsProvider(logger?: ProviderLogger): SmsProvider {
  return {
    name: 'log',
    describe: () =>
      'log: writes each SMS to the server log (its number masked to the country code and last three digits, its text with the code masked); sends nothing (SMS_PROVIDER=log)',
    async send(message: SmsMessage): Promise<SendResult> {
      logger?.info(
        {
          provider: 'log',
          to: message.to,
          // The masked text queued with the delivery: the code never reaches the log.
          text: message.maskedText ?? UNMASKED_TEXT,
          idempotencyKey: message.idempotencyKey,
        },
        'SMS logged, not sent (SMS_PROVIDER=log)',
      );
      return { ok: true, response: LOGGED_RESPONSE };
    },
  };
}

export function createLogPushProvider(logger?: ProviderLogger): PushProvider {
  return {
    name: 'log',
    describe: () =>
      'log: writes each push to the server log (its topic, title, body and data); sends nothing (PUSH_PROVIDER=log)',
    async send(message: PushMessage): Promise<SendResult> {
      logger?.info(
        {
          provider: 'log',
          topic: message.topic,
          title: message.title,
          body: message.body,
          data: message.data,
          idempotencyKey: message.idempotencyKey,
        },
        'Push logged, not sent (PUSH_PROVIDER=log)',
      );
      return { ok: true, response: LOGGED_RESPONSE };
    },
  };
}
