/**
 * The providers' environment variables. `providerConfigSchema` is an object schema the server's
 * configuration merges; `checkProviderConfig` holds the checks that span several variables
 * (which provider needs which). Zod drops refinements when only a shape is merged, so the
 * server's schema applies the check itself:
 *
 *   z.object({ ... }).extend(providerConfigShape).superRefine(checkProviderConfig)
 *
 * or starts from this schema: `providerConfigSchema.extend({ ... })` keeps the check.
 */
import { z } from 'zod';
import { baseUrl, httpUrl, integer, issuesOn, lowerEnum, optional } from '../env/values.js';
import { encoderFor, fillTemplate } from './http-gateway.js';
import { readServiceAccount } from './service-account.js';
import { DEFAULT_SMS_TEMPLATE } from './sms-text.js';

const sid = (prefix: string, what: string) =>
  z
    .string()
    .trim()
    .regex(new RegExp(`^${prefix}[0-9a-fA-F]{32}$`), `must be ${what}: ${prefix} followed by 32 hex digits`);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the gateway request sets itself. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'transfer-encoding',
  'connection',
]);

const headersJson = (contentTypeVariable: string) =>
  z.string().transform((text, ctx): Record<string, string> => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"Authorization":"Bearer …"}' });
      return z.NEVER;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of header names to string values' });
      return z.NEVER;
    }
    const headers: Record<string, string> = {};
    for (const [name, v] of Object.entries(value)) {
      if (!HEADER_NAME.test(name)) {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(name)} is not a valid header name` });
      } else if (RESERVED_HEADERS.has(name.toLowerCase())) {
        ctx.addIssue({
          code: 'custom',
          message: `must not set ${name}${name.toLowerCase() === 'content-type' ? ` (use ${contentTypeVariable})` : ''}`,
        });
      } else if (typeof v !== 'string' || /[\r\n\0]/.test(v)) {
        ctx.addIssue({ code: 'custom', message: `the value of ${name} must be a string on one line` });
      } else {
        headers[name] = v;
      }
    }
    return headers;
  });

/** A generic HTTP gateway's variables are named `${prefix}_URL` and so on. */
type GatewayPrefix = 'SMS_HTTP' | 'SMS_FALLBACK_HTTP';

type Prefixed<P extends string, T> = { [K in keyof T & string as `${P}_${K}`]: T[K] };

/** `fields` with their names prefixed: `{ URL }` under `SMS_HTTP` is `{ SMS_HTTP_URL }`. */
function prefixed<P extends string, T extends Record<string, unknown>>(prefix: P, fields: T): Prefixed<P, T> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, schema]) => [`${prefix}_${name}`, schema]),
  ) as Prefixed<P, T>;
}

/**
 * The variables of one generic HTTP gateway: SMS_HTTP_* for the primary, SMS_FALLBACK_HTTP_* for
 * the fallback, the same settings with the same defaults. `exampleUrl` is shown in the URL's error.
 */
function httpGatewayShape<P extends GatewayPrefix>(prefix: P, exampleUrl: string) {
  return prefixed(prefix, {
    URL: optional(httpUrl(exampleUrl).optional()),
    METHOD: optional(
      z
        .string()
        .trim()
        .toUpperCase()
        .pipe(z.enum(['POST', 'GET']))
        .default('POST'),
    ),
    HEADERS: optional(headersJson(`${prefix}_CONTENT_TYPE`).default({})),
    BODY: optional(z.string().optional()),
    CONTENT_TYPE: optional(
      z
        .string()
        .trim()
        .regex(/^[\w.+-]+\/[\w.+-]+\s*(;.*)?$/, 'must be a media type, e.g. application/json')
        .default('application/x-www-form-urlencoded'),
    ),
  });
}

/** Every provider variable; see the README's table. */
export const providerConfigShape = {
  SMS_PROVIDER: optional(lowerEnum(['log', 'twilio', 'http']).default('log')),
  SMS_TEMPLATE: optional(z.string().default(DEFAULT_SMS_TEMPLATE)),

  TWILIO_BASE_URL: optional(baseUrl('https://api.twilio.com').default('https://api.twilio.com')),
  TWILIO_ACCOUNT_SID: optional(sid('AC', 'an account SID').optional()),
  TWILIO_AUTH_TOKEN: optional(z.string().trim().optional()),
  TWILIO_API_KEY_SID: optional(sid('SK', 'an API key SID').optional()),
  TWILIO_API_KEY_SECRET: optional(z.string().trim().optional()),
  TWILIO_FROM: optional(
    z
      .string()
      .trim()
      .refine(
        (v) =>
          /^\+[1-9]\d{6,14}$/.test(v) || /^\d{3,8}$/.test(v) || /^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$/.test(v),
        'must be an E.164 number (+15551234567), a short code or an alphanumeric sender ID (up to 11 characters)',
      )
      .optional(),
  ),
  TWILIO_MESSAGING_SERVICE_SID: optional(sid('MG', 'a messaging service SID').optional()),
  TWILIO_STATUS_CALLBACK_URL: optional(httpUrl('https://sms.example.org/twilio/status').optional()),

  // SMS_HTTP_URL, SMS_HTTP_METHOD, SMS_HTTP_HEADERS, SMS_HTTP_BODY, SMS_HTTP_CONTENT_TYPE.
  ...httpGatewayShape('SMS_HTTP', 'https://gateway.example.com/send'),

  /**
   * A second SMS provider, used while the first's circuit is open and after it refused a message
   * for certain (docs/outbox.md#providers-lanes-and-circuits).
   */
  SMS_FALLBACK_PROVIDER: optional(lowerEnum(['twilio', 'http']).optional()),
  // SMS_FALLBACK_HTTP_URL, _METHOD, _HEADERS, _BODY, _CONTENT_TYPE: the same as SMS_HTTP_*'s.
  ...httpGatewayShape('SMS_FALLBACK_HTTP', 'https://backup-gateway.example.com/send'),

  PUSH_PROVIDER: optional(lowerEnum(['log', 'fcm', 'webhook']).default('log')),
  /** A service-account JSON key; without one, FCM uses Application Default Credentials. */
  FCM_SERVICE_ACCOUNT_FILE: optional(z.string().trim().optional()),
  /** The Firebase project; defaults to the key's project_id, required without a key. */
  FCM_PROJECT_ID: optional(
    z
      .string()
      .trim()
      .regex(
        /^[a-z0-9][a-z0-9.:-]*$/,
        'must be a Google Cloud project id (lower-case letters, digits, hyphens)',
      )
      .optional(),
  ),
  FCM_BASE_URL: optional(baseUrl('https://fcm.googleapis.com').default('https://fcm.googleapis.com')),
  FCM_TOKEN_URL: optional(httpUrl('https://oauth2.googleapis.com/token').optional()),

  PUSH_WEBHOOK_URL: optional(httpUrl('https://push.example.org/hook').optional()),
  PUSH_WEBHOOK_SECRET: optional(z.string().optional()),

  /** One provider request's timeout; the outbox's lease is derived from it (deliveryLeaseMs, ../config.ts). */
  PROVIDER_TIMEOUT_MS: optional(integer(100, 120_000).default(10_000)),
};

type ProviderValues = z.output<z.ZodObject<typeof providerConfigShape>>;

/** The cross-variable rules; each issue is reported on the variable to set or fix. */
export function checkProviderConfig(config: ProviderValues, ctx: z.RefinementCtx): void {
  const issue = issuesOn(ctx);

  if (typeof config.SMS_TEMPLATE === 'string' && !config.SMS_TEMPLATE.includes('{code}')) {
    issue('SMS_TEMPLATE', 'must contain {code}, where the auth code goes');
  }

  const usesTwilio = config.SMS_PROVIDER === 'twilio' || config.SMS_FALLBACK_PROVIDER === 'twilio';
  const twilioBy = config.SMS_PROVIDER === 'twilio' ? 'SMS_PROVIDER=twilio' : 'SMS_FALLBACK_PROVIDER=twilio';
  if (usesTwilio) {
    if (!config.TWILIO_ACCOUNT_SID) issue('TWILIO_ACCOUNT_SID', `is required when ${twilioBy}`);
    const keySid = config.TWILIO_API_KEY_SID;
    const keySecret = config.TWILIO_API_KEY_SECRET;
    if (keySid && !keySecret) issue('TWILIO_API_KEY_SECRET', 'is required with TWILIO_API_KEY_SID');
    if (keySecret && !keySid) issue('TWILIO_API_KEY_SID', 'is required with TWILIO_API_KEY_SECRET');
    if (!config.TWILIO_AUTH_TOKEN && !keySid && !keySecret) {
      issue(
        'TWILIO_AUTH_TOKEN',
        `is required when ${twilioBy}, unless TWILIO_API_KEY_SID and TWILIO_API_KEY_SECRET are set`,
      );
    }
    if (!config.TWILIO_FROM && !config.TWILIO_MESSAGING_SERVICE_SID) {
      issue('TWILIO_FROM', `is required when ${twilioBy}, unless TWILIO_MESSAGING_SERVICE_SID is set`);
    }
  }

  if (config.SMS_PROVIDER === 'http')
    checkHttpGateway(httpGatewayOf(config, 'SMS_HTTP'), 'SMS_PROVIDER=http', issue);

  const fallback = config.SMS_FALLBACK_PROVIDER;
  if (fallback !== undefined) {
    if (config.SMS_PROVIDER === 'log') {
      issue(
        'SMS_FALLBACK_PROVIDER',
        'needs a real SMS_PROVIDER (twilio or http) to fall back from: the log provider sends nothing and never fails',
      );
    } else if (fallback === 'twilio' && config.SMS_PROVIDER === 'twilio') {
      issue('SMS_FALLBACK_PROVIDER', 'must be another gateway than SMS_PROVIDER: both are Twilio (TWILIO_*)');
    } else if (fallback === 'http') {
      const gateway = httpGatewayOf(config, 'SMS_FALLBACK_HTTP');
      checkHttpGateway(gateway, 'SMS_FALLBACK_PROVIDER=http', issue);
      if (
        config.SMS_PROVIDER === 'http' &&
        gateway.url !== undefined &&
        config.SMS_HTTP_URL !== undefined &&
        sameGateway(gateway.url, config.SMS_HTTP_URL)
      ) {
        issue('SMS_FALLBACK_HTTP_URL', 'must be another gateway than SMS_HTTP_URL (it is the same one)');
      }
    }
  }

  if (config.PUSH_PROVIDER === 'fcm') {
    const file = config.FCM_SERVICE_ACCOUNT_FILE;
    if (!file) {
      // Application Default Credentials: looked for at the first push, not here (on Google Cloud
      // that asks the metadata server); the project cannot be taken from a key.
      if (!config.FCM_PROJECT_ID) {
        issue(
          'FCM_PROJECT_ID',
          'is required when PUSH_PROVIDER=fcm has no FCM_SERVICE_ACCOUNT_FILE (Application Default Credentials)',
        );
      }
    } else {
      try {
        const account = readServiceAccount(file);
        if (!account.tokenUri && !config.FCM_TOKEN_URL) {
          issue('FCM_TOKEN_URL', `is required: ${file} has no token_uri`);
        }
      } catch (error) {
        issue('FCM_SERVICE_ACCOUNT_FILE', (error as Error).message);
      }
    }
  }

  if (config.PUSH_PROVIDER === 'webhook') {
    if (!config.PUSH_WEBHOOK_URL) issue('PUSH_WEBHOOK_URL', 'is required when PUSH_PROVIDER=webhook');
    const secret = config.PUSH_WEBHOOK_SECRET;
    if (!secret)
      issue('PUSH_WEBHOOK_SECRET', 'is required when PUSH_PROVIDER=webhook (at least 16 characters)');
    else if (secret.length < 16) issue('PUSH_WEBHOOK_SECRET', 'must be at least 16 characters');
  }
}

/** The settings of one generic HTTP gateway: SMS_HTTP_* for the primary, SMS_FALLBACK_HTTP_* for the fallback. */
export interface HttpGatewaySettings {
  readonly prefix: GatewayPrefix;
  readonly url: string | undefined;
  readonly method: 'POST' | 'GET';
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
  readonly contentType: string;
}

export function httpGatewayOf(
  config: ProviderValues,
  prefix: HttpGatewaySettings['prefix'],
): HttpGatewaySettings {
  return {
    prefix,
    url: config[`${prefix}_URL` as const],
    method: config[`${prefix}_METHOD` as const],
    headers: config[`${prefix}_HEADERS` as const],
    body: config[`${prefix}_BODY` as const],
    contentType: config[`${prefix}_CONTENT_TYPE` as const],
  };
}

/** The rules of a generic HTTP gateway's settings, each reported on the variable to fix. */
function checkHttpGateway(
  gateway: HttpGatewaySettings,
  chosenBy: string,
  issue: (variable: string, message: string) => void,
): void {
  const { prefix, url, body, method } = gateway;
  if (!url) issue(`${prefix}_URL`, `is required when ${chosenBy}`);
  if (method === 'POST' && body === undefined) {
    issue(
      `${prefix}_BODY`,
      `is required when ${chosenBy} and ${prefix}_METHOD=POST, e.g. to={to}&text={text}`,
    );
  } else {
    // With GET the placeholders may sit in the URL's query instead of the template.
    const where = `${body ?? ''}${method === 'GET' ? (url ?? '') : ''}`;
    const missing = ['{to}', '{text}'].filter((p) => !where.includes(p));
    if (missing.length > 0) {
      issue(
        `${prefix}_BODY`,
        `must contain ${missing.join(' and ')}${method === 'GET' ? ` (or ${prefix}_URL must)` : ''}`,
      );
    }
  }
  if (body !== undefined && method === 'POST' && /[/+]json\b/i.test(gateway.contentType)) {
    const sample = fillTemplate(
      body,
      { to: '+15550000000', text: 'a "b"', idempotencyKey: 'k' },
      encoderFor(gateway.contentType),
    );
    try {
      JSON.parse(sample);
    } catch {
      issue(`${prefix}_BODY`, 'is not valid JSON once filled in (put {to} and {text} inside quotes: "{to}")');
    }
  }
}

/** The same gateway: the same URL, up to the case of its scheme and host and a trailing slash. */
function sameGateway(a: string, b: string): boolean {
  const normal = (u: string) => {
    const url = new URL(u);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  };
  return URL.canParse(a) && URL.canParse(b) && normal(a) === normal(b);
}

/** The provider variables on their own, with the cross-variable checks. */
export const providerConfigSchema = z.object(providerConfigShape).superRefine(checkProviderConfig);

/** The validated provider configuration (the server's Config is a superset of it). */
export type ProviderConfig = z.output<typeof providerConfigSchema>;
