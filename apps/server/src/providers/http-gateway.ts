/**
 * A generic SMS gateway over HTTP: the URL, method, headers and a body template are configured;
 * `{to}`, `{text}` and `{idempotencyKey}` are filled in, encoded for where they land.
 */
import {
  classifyStatus,
  displayUrl,
  httpRequest,
  isFailure,
  isRecord,
  providerReason,
  redact,
  truncate,
  tryParseJson,
} from './http.js';
import type { SendResult, SmsMessage, SmsProvider } from './types.js';

export interface HttpGatewayOptions {
  readonly url: string;
  readonly method: 'POST' | 'GET';
  readonly headers: Readonly<Record<string, string>>;
  /** With POST the body; with GET appended to the URL as its query. */
  readonly bodyTemplate?: string | undefined;
  readonly contentType: string;
  readonly timeoutMs: number;
}

export interface TemplateValues {
  readonly to: string;
  readonly text: string;
  readonly idempotencyKey: string;
}

export type Encoder = (value: string) => string;

/** application/x-www-form-urlencoded's encoding (spaces as `+`), the same as URLSearchParams. */
export const formEncode: Encoder = (value) => new URLSearchParams({ v: value }).toString().slice(2);

/** The inside of a JSON string literal: the template supplies the quotes (`"{text}"`). */
export const jsonEncode: Encoder = (value) => JSON.stringify(value).slice(1, -1);

export const xmlEncode: Encoder = (value) =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] as string,
  );

/** How values are encoded in a body of this content type. Anything unrecognised gets them raw. */
export function encoderFor(contentType: string): Encoder {
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return formEncode;
  if (type === 'application/json' || type.endsWith('+json')) return jsonEncode;
  if (type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return xmlEncode;
  return (value) => value;
}

/** Fills the placeholders in one pass, so a `{to}` inside the text is not filled in again. */
export function fillTemplate(template: string, values: TemplateValues, encode: Encoder): string {
  return template.replace(/\{(to|text|idempotencyKey)\}/g, (_, name: keyof TemplateValues) =>
    encode(values[name]),
  );
}

/** Header values that look like credentials (anything but the obviously harmless ones). */
const PLAIN_HEADERS = new Set(['accept', 'accept-language', 'user-agent', 'cache-control']);

function secretsOf(options: HttpGatewayOptions): string[] {
  const secrets: string[] = [];
  for (const [name, value] of Object.entries(options.headers)) {
    if (PLAIN_HEADERS.has(name.toLowerCase())) continue;
    secrets.push(value);
    // `Bearer abc`, `Basic abc`: the credential alone may be echoed too.
    const parts = value.split(/\s+/);
    if (parts.length === 2 && parts[1]) secrets.push(parts[1]);
  }
  try {
    const url = new URL(options.url);
    if (url.password) secrets.push(decodeURIComponent(url.password), url.password);
    for (const value of url.searchParams.values())
      if (!/\{\w+\}/.test(value) && value.length >= 8) secrets.push(value);
  } catch {
    // The configuration checked the URL.
  }
  return secrets;
}

export function createHttpGatewayProvider(options: HttpGatewayOptions): SmsProvider {
  const secrets = secretsOf(options);
  const bodyEncoder = encoderFor(options.contentType);

  return {
    name: 'http',
    describe: () => `HTTP gateway: ${options.method} ${displayUrl(options.url)} (${options.contentType})`,

    async send(message: SmsMessage, signal?: AbortSignal): Promise<SendResult> {
      const values: TemplateValues = {
        to: message.to,
        text: message.text,
        idempotencyKey: message.idempotencyKey,
      };
      // A gateway echoing the text back (raw, form, JSON or XML encoded) would put the auth code in
      // the attempt's record.
      const hidden = [
        ...secrets,
        ...[formEncode, jsonEncode, xmlEncode].map((encode) => encode(message.text)),
        message.text,
      ];
      const clean = (text: string) => truncate(redact(text, hidden));
      let url = fillTemplate(options.url, values, encodeURIComponent);
      const headers: Record<string, string> = {
        Accept: 'application/json, text/plain;q=0.9, */*;q=0.1',
        ...options.headers,
        'Idempotency-Key': message.idempotencyKey,
      };
      let body: string | undefined;
      if (options.method === 'GET') {
        if (options.bodyTemplate !== undefined) {
          const query = fillTemplate(options.bodyTemplate, values, formEncode);
          url += (url.includes('?') ? '&' : '?') + query;
        }
      } else {
        body = fillTemplate(options.bodyTemplate ?? '', values, bodyEncoder);
        headers['Content-Type'] = options.contentType;
      }

      const answer = await httpRequest({
        url,
        method: options.method,
        headers,
        body,
        timeoutMs: options.timeoutMs,
        signal,
        what: 'SMS gateway',
      });
      if (isFailure(answer)) return { ...answer, error: redact(answer.error, secrets) };

      if (answer.status >= 200 && answer.status < 300) {
        const providerId = idFrom(answer.text);
        return {
          ok: true,
          ...(providerId ? { providerId } : {}),
          response: clean(`HTTP ${answer.status}${answer.text.trim() ? `: ${answer.text}` : ''}`),
        };
      }
      const { kind, retryAfterMs } = classifyStatus(answer.status, answer.headers);
      const what =
        answer.status >= 300 && answer.status < 400
          ? `redirected to ${redirectTarget(answer.headers.get('location'), url)}; configure the final URL`
          : kind === 'transient'
            ? 'temporarily unavailable'
            : 'refused the message';
      // It answered: whatever it said, it did not take the message. Its own reason comes first in
      // the error, where staff read it ("refused the message: account suspended").
      const reason = providerReason(redact(answer.text, hidden));
      return {
        ok: false,
        kind,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        error: `SMS gateway ${what}${reason ? `: ${reason}` : ''} (HTTP ${answer.status})`,
        status: answer.status,
        response: clean(answer.text),
        taken: 'no',
      };
    },
  };
}

/** A message id when the gateway answers JSON with one under a common name. */
function idFrom(text: string): string | undefined {
  const json = tryParseJson(text);
  if (!isRecord(json)) return undefined;
  for (const key of ['id', 'messageId', 'message_id', 'sid', 'uuid']) {
    const value = json[key];
    if (typeof value === 'string' && value.length <= 200) return value;
    if (typeof value === 'number') return String(value);
  }
  return undefined;
}

function redirectTarget(location: string | null, base: string): string {
  if (!location || !URL.canParse(location, base)) return 'elsewhere';
  return displayUrl(new URL(location, base).href);
}
