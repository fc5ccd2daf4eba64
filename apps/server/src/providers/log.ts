/**
 * The default providers: nothing leaves the machine. The delivery is recorded as sent with the
 * response `logged, not sent`, and the console shows the message from the outbox.
 */
import type { PushMessage, PushProvider, SendResult, SmsMessage, SmsProvider } from './types.js';

/** The slice of a pino/Fastify logger the log providers use. */
export interface ProviderLogger {
  info(object: Record<string, unknown>, message: string): void;
}

export const LOGGED_RESPONSE = 'logged, not sent';

export function createLogSmsProvider(logger?: ProviderLogger): SmsProvider {
  return {
    name: 'log',
    describe: () => 'log: SMS are logged, not sent (SMS_PROVIDER=log)',
    async send(message: SmsMessage): Promise<SendResult> {
      // The text is not logged: it holds the auth code, which the call history masks.
      logger?.info(
        {
          provider: 'log',
          to: message.to,
          characters: message.text.length,
          idempotencyKey: message.idempotencyKey,
        },
        'SMS not sent (SMS_PROVIDER=log)',
      );
      return { ok: true, response: LOGGED_RESPONSE };
    },
  };
}

export function createLogPushProvider(logger?: ProviderLogger): PushProvider {
  return {
    name: 'log',
    describe: () => 'log: pushes are logged, not sent (PUSH_PROVIDER=log)',
    async send(message: PushMessage): Promise<SendResult> {
      logger?.info(
        {
          provider: 'log',
          topic: message.topic,
          title: message.title,
          idempotencyKey: message.idempotencyKey,
        },
        'Push not sent (PUSH_PROVIDER=log)',
      );
      return { ok: true, response: LOGGED_RESPONSE };
    },
  };
}
