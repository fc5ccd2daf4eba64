/**
 * Pushes as a signed JSON POST to a URL the operator runs (their own push relay). The signature
 * covers the timestamp and the raw body, so a receiver can refuse forgeries and stale replays;
 * the idempotency key lets it drop our retries of a message it already has.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
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
import type { PushMessage, PushProvider, SendResult } from './types.js';

export interface WebhookOptions {
  readonly url: string;
  readonly secret: string;
  readonly timeoutMs: number;
  readonly now?: () => number;
}

/** `sha256=` + hex HMAC-SHA256 with the shared secret over `${timestamp}.${rawBody}`. */
export function webhookSignature(
  secret: string,
  timestamp: number | string,
  rawBody: string | Uint8Array,
): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`${timestamp}.`, 'utf8');
  hmac.update(rawBody);
  return `sha256=${hmac.digest('hex')}`;
}

/**
 * For receivers (and tests): true when `header` (X-Signature) is the signature of `rawBody` (the
 * bytes as received, before any JSON parsing) at `timestamp` (X-Signature-Timestamp, unix
 * seconds), and that timestamp is within `toleranceSeconds` of now. Timing-safe.
 */
export function verifyWebhookSignature(
  secret: string,
  timestamp: string | number | null | undefined,
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  toleranceSeconds = 300,
  nowMs: number = Date.now(),
): boolean {
  if (!secret || !header || timestamp === null || timestamp === undefined) return false;
  const ts = String(timestamp).trim();
  if (!/^\d{1,12}$/.test(ts)) return false;
  if (Math.abs(nowMs / 1000 - Number(ts)) > toleranceSeconds) return false;
  const given = header.trim();
  if (!/^sha256=[0-9a-f]{64}$/i.test(given)) return false;
  const expected = Buffer.from(webhookSignature(secret, ts, rawBody).slice('sha256='.length), 'hex');
  const actual = Buffer.from(given.slice('sha256='.length), 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export function createWebhookProvider(options: WebhookOptions): PushProvider {
  const now = options.now ?? Date.now;
  const clean = (text: string) => truncate(redact(text, [options.secret]));

  return {
    name: 'webhook',
    describe: () => `Signed webhook: POST ${displayUrl(options.url)}`,

    async send(message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
      const at = now();
      const timestamp = Math.floor(at / 1000);
      const rawBody = JSON.stringify({
        topic: message.topic,
        title: message.title,
        body: message.body,
        data: message.data,
        idempotencyKey: message.idempotencyKey,
        sentAt: new Date(at).toISOString(),
      });
      const answer = await httpRequest({
        url: options.url,
        method: 'POST',
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          Accept: 'application/json, text/plain;q=0.9, */*;q=0.1',
          'X-Signature-Timestamp': String(timestamp),
          'X-Signature': webhookSignature(options.secret, timestamp, rawBody),
          'Idempotency-Key': message.idempotencyKey,
        },
        body: rawBody,
        timeoutMs: options.timeoutMs,
        signal,
        what: 'Push webhook',
      });
      if (isFailure(answer)) return answer;

      if (answer.status >= 200 && answer.status < 300) {
        const json = tryParseJson(answer.text);
        const id =
          isRecord(json) && (typeof json.id === 'string' || typeof json.id === 'number')
            ? String(json.id)
            : '';
        return {
          ok: true,
          ...(id ? { providerId: id } : {}),
          response: clean(`HTTP ${answer.status}${answer.text.trim() ? `: ${answer.text}` : ''}`),
        };
      }
      const { kind, retryAfterMs } = classifyStatus(answer.status, answer.headers, now());
      // Its own reason first, where staff read it ("refused the push: unknown topic").
      const reason = providerReason(redact(answer.text, [options.secret]));
      return {
        ok: false,
        kind,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        error: `Push webhook ${kind === 'transient' ? 'temporarily unavailable' : 'refused the push'}${reason ? `: ${reason}` : ''} (HTTP ${answer.status})`,
        status: answer.status,
        response: clean(answer.text),
      };
    },
  };
}
