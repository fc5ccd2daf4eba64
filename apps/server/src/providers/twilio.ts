/**
 * Twilio's Messages REST API: POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json, form
 * encoded, HTTP Basic auth with the account SID and auth token or an API key SID and secret.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  classifyStatus,
  displayUrl,
  httpRequest,
  isFailure,
  isRecord,
  redact,
  truncate,
  tryParseJson,
} from './http.js';
import type { SendResult, SmsMessage, SmsProvider } from './types.js';

export interface TwilioOptions {
  readonly baseUrl: string;
  readonly accountSid: string;
  readonly authToken?: string | undefined;
  /** An API key (SK…) and its secret; used instead of the auth token when set. */
  readonly apiKeySid?: string | undefined;
  readonly apiKeySecret?: string | undefined;
  readonly from?: string | undefined;
  readonly messagingServiceSid?: string | undefined;
  readonly statusCallback?: string | undefined;
  readonly timeoutMs: number;
}

/**
 * Error codes that retrying cannot fix, whatever the HTTP status (https://www.twilio.com/docs/api/errors):
 * 21211 invalid 'To' number, 21610 the recipient replied STOP, 30003 unreachable handset,
 * 30006 landline or unreachable carrier.
 */
const PERMANENT_CODES: Readonly<Record<number, string>> = {
  21211: "invalid 'To' phone number",
  21610: 'the recipient has unsubscribed (replied STOP)',
  30003: 'unreachable destination handset',
  30006: 'landline or unreachable carrier',
};
/** 20429: Too Many Requests (Twilio's concurrency limit). */
const TRANSIENT_CODES: Readonly<Record<number, string>> = { 20429: 'too many requests' };

export function createTwilioProvider(options: TwilioOptions): SmsProvider {
  const useKey = Boolean(options.apiKeySid && options.apiKeySecret);
  const user = useKey ? (options.apiKeySid as string) : options.accountSid;
  const password = (useKey ? options.apiKeySecret : options.authToken) ?? '';
  const basic = Buffer.from(`${user}:${password}`).toString('base64');
  const secrets = [options.authToken, options.apiKeySecret, basic];
  const url = `${options.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Messages.json`;
  const sender = options.messagingServiceSid
    ? `messaging service ${options.messagingServiceSid}`
    : `from ${options.from ?? '?'}`;

  return {
    name: 'twilio',
    describe: () =>
      `Twilio ${sender}, account ${options.accountSid}${useKey ? ` (API key ${options.apiKeySid})` : ''}, ${displayUrl(url)}`,

    async send(message: SmsMessage, signal?: AbortSignal): Promise<SendResult> {
      const form = new URLSearchParams({ To: message.to, Body: message.text });
      // With a messaging service Twilio picks the sender from its pool; From would have to belong to it.
      if (options.messagingServiceSid) form.set('MessagingServiceSid', options.messagingServiceSid);
      else if (options.from) form.set('From', options.from);
      if (options.statusCallback) form.set('StatusCallback', options.statusCallback);

      const answer = await httpRequest({
        url,
        method: 'POST',
        headers: {
          Authorization: `Basic ${basic}`,
          'Content-Type': 'application/x-www-form-urlencoded',
          Accept: 'application/json',
          'I-Twilio-Idempotency-Token': message.idempotencyKey,
        },
        body: form.toString(),
        timeoutMs: options.timeoutMs,
        signal,
        what: 'Twilio',
      });
      if (isFailure(answer)) return answer;

      const json = tryParseJson(answer.text);
      const body = isRecord(json) ? json : {};
      if (answer.status >= 200 && answer.status < 300) {
        const sid = typeof body.sid === 'string' ? body.sid : undefined;
        const status = typeof body.status === 'string' ? body.status : undefined;
        // A summary, not the body: Twilio echoes the text back, and the text holds the auth code.
        return {
          ok: true,
          ...(sid ? { providerId: sid } : {}),
          response: `HTTP ${answer.status}: ${status ?? 'accepted'}${sid ? `, sid ${sid}` : ''}`,
        };
      }

      const code = typeof body.code === 'number' ? body.code : Number.parseInt(String(body.code ?? ''), 10);
      const twilioMessage = typeof body.message === 'string' ? body.message : undefined;
      let kind: 'transient' | 'permanent';
      let retryAfterMs: number | undefined;
      if (code in PERMANENT_CODES) {
        kind = 'permanent';
      } else if (code in TRANSIENT_CODES) {
        kind = 'transient';
        retryAfterMs = classifyStatus(429, answer.headers).retryAfterMs;
      } else {
        ({ kind, retryAfterMs } = classifyStatus(answer.status, answer.headers));
      }
      const meaning = twilioMessage ?? PERMANENT_CODES[code] ?? TRANSIENT_CODES[code];
      const label = Number.isFinite(code) ? `Twilio error ${code}` : 'Twilio error';
      return {
        ok: false,
        kind,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        error: truncate(redact(`${label}${meaning ? `: ${meaning}` : ''} (HTTP ${answer.status})`, secrets)),
        status: answer.status,
        response: truncate(redact(answer.text, secrets)),
        // Twilio answered with an error: it did not take the message.
        taken: 'no',
      };
    },
  };
}

/** Twilio's X-Twilio-Signature for a request: HMAC-SHA1 over the URL and the sorted POST params. */
export function twilioSignature(
  url: string,
  params: Readonly<Record<string, string | readonly string[]>>,
  authToken: string,
): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    const values = typeof value === 'string' ? [value] : [...(value ?? [])].sort();
    for (const v of values) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * Checks a request Twilio sent us (a status callback): `url` is the full URL Twilio requested
 * (with its query), `params` the POST parameters (form fields, decoded), `signatureHeader` the
 * X-Twilio-Signature header. The URL is also tried with its default port added or removed, as
 * Twilio's own libraries do, since proxies differ in which form they pass on.
 */
export function verifyTwilioSignature(
  url: string,
  params: Readonly<Record<string, string | readonly string[]>>,
  signatureHeader: string | null | undefined,
  authToken: string,
): boolean {
  if (!signatureHeader || !authToken) return false;
  const given = Buffer.from(signatureHeader, 'utf8');
  return urlVariants(url).some((candidate) => {
    const expected = Buffer.from(twilioSignature(candidate, params, authToken), 'utf8');
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

function urlVariants(url: string): string[] {
  const variants = [url];
  const match = /^(https?):\/\/([^/?#@]*@)?([^/?#:]+|\[[^\]]+\])(:\d+)?(.*)$/i.exec(url);
  if (!match) return variants;
  const [, scheme = '', userinfo = '', host = '', port, rest = ''] = match;
  const defaultPort = scheme.toLowerCase() === 'https' ? ':443' : ':80';
  if (port === undefined) variants.push(`${scheme}://${userinfo}${host}${defaultPort}${rest}`);
  else if (port === defaultPort) variants.push(`${scheme}://${userinfo}${host}${rest}`);
  return variants;
}
