/**
 * The SMS and push providers, chosen by configuration (docs/configuration.md#providers). The
 * dispatcher calls `send` and records what comes back; see types.ts.
 */
import { httpGatewayOf, type ProviderConfig } from './config.js';
import { createFcmProvider } from './fcm.js';
import { createHttpGatewayProvider } from './http-gateway.js';
import { createLogPushProvider, createLogSmsProvider, type ProviderLogger } from './log.js';
import { readServiceAccount } from './service-account.js';
import { createTwilioProvider } from './twilio.js';
import type { PushProvider, SmsProvider } from './types.js';
import { createWebhookProvider } from './webhook.js';

export {
  checkProviderConfig,
  type ProviderConfig,
  providerConfigSchema,
  providerConfigShape,
} from './config.js';
export { parseRetryAfter } from './http.js';
export type { ProviderLogger } from './log.js';
export { DEFAULT_SMS_TEMPLATE, renderSmsText } from './sms-text.js';
export { verifyTwilioSignature } from './twilio.js';
export type { PushMessage, PushProvider, SendResult, SmsMessage, SmsProvider } from './types.js';
export { verifyWebhookSignature } from './webhook.js';

export interface ProviderDeps {
  /** Where the log providers write; nothing is logged without one. */
  readonly logger?: ProviderLogger;
  /** The clock (tests). */
  readonly now?: () => number;
}

/** The SMS provider SMS_PROVIDER names. `config` is the validated configuration. */
export function createSmsProvider(config: ProviderConfig, deps: ProviderDeps = {}): SmsProvider {
  switch (config.SMS_PROVIDER) {
    case 'log':
      return createLogSmsProvider(deps.logger);
    case 'twilio':
      return twilio(config);
    case 'http':
      return httpGateway(config, 'SMS_HTTP');
  }
}

/**
 * The fallback SMS provider SMS_FALLBACK_PROVIDER names, if any: `twilio` with the TWILIO_*
 * settings, `http` with its own SMS_FALLBACK_HTTP_* (docs/outbox.md#providers-lanes-and-circuits).
 */
export function createSmsFallbackProvider(config: ProviderConfig): SmsProvider | undefined {
  switch (config.SMS_FALLBACK_PROVIDER) {
    case undefined:
      return undefined;
    case 'twilio':
      return twilio(config);
    case 'http':
      return httpGateway(config, 'SMS_FALLBACK_HTTP');
  }
}

function httpGateway(config: ProviderConfig, prefix: 'SMS_HTTP' | 'SMS_FALLBACK_HTTP'): SmsProvider {
  const gateway = httpGatewayOf(config, prefix);
  return createHttpGatewayProvider({
    url: required(gateway.url, `${prefix}_URL`),
    method: gateway.method,
    headers: gateway.headers,
    bodyTemplate: gateway.body,
    contentType: gateway.contentType,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
  });
}

/**
 * The push provider PUSH_PROVIDER names. With `fcm` the service-account file, if any, is read
 * here, once; an unreadable file throws (start-up), it never fails a send.
 */
export function createPushProvider(config: ProviderConfig, deps: ProviderDeps = {}): PushProvider {
  switch (config.PUSH_PROVIDER) {
    case 'log':
      return createLogPushProvider(deps.logger);
    case 'fcm':
      return createFcmProvider({
        // Without a key file: Application Default Credentials.
        serviceAccount: config.FCM_SERVICE_ACCOUNT_FILE
          ? readServiceAccount(config.FCM_SERVICE_ACCOUNT_FILE)
          : undefined,
        projectId: config.FCM_PROJECT_ID,
        baseUrl: config.FCM_BASE_URL,
        tokenUrl: config.FCM_TOKEN_URL,
        timeoutMs: config.PROVIDER_TIMEOUT_MS,
        ...(deps.now ? { now: deps.now } : {}),
      });
    case 'webhook':
      return createWebhookProvider({
        url: required(config.PUSH_WEBHOOK_URL, 'PUSH_WEBHOOK_URL'),
        secret: required(config.PUSH_WEBHOOK_SECRET, 'PUSH_WEBHOOK_SECRET'),
        timeoutMs: config.PROVIDER_TIMEOUT_MS,
        ...(deps.now ? { now: deps.now } : {}),
      });
  }
}

function twilio(config: ProviderConfig): SmsProvider {
  return createTwilioProvider({
    baseUrl: config.TWILIO_BASE_URL,
    accountSid: required(config.TWILIO_ACCOUNT_SID, 'TWILIO_ACCOUNT_SID'),
    authToken: config.TWILIO_AUTH_TOKEN,
    apiKeySid: config.TWILIO_API_KEY_SID,
    apiKeySecret: config.TWILIO_API_KEY_SECRET,
    from: config.TWILIO_FROM,
    messagingServiceSid: config.TWILIO_MESSAGING_SERVICE_SID,
    statusCallback: config.TWILIO_STATUS_CALLBACK_URL,
    timeoutMs: config.PROVIDER_TIMEOUT_MS,
  });
}

/** The configuration's checks guarantee these; a config built by hand may not. */
function required(value: string | undefined, variable: string): string {
  if (value === undefined || value === '') throw new Error(`${variable} is required by the chosen provider`);
  return value;
}
