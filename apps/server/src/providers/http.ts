/**
 * What every HTTP provider shares: one request with a timeout that never throws, Retry-After
 * parsing, status classification, and keeping secrets and bulk out of what gets recorded.
 */
import http from 'node:http';
import https from 'node:https';
import type { SendResult } from './types.js';

export type Failure = Extract<SendResult, { ok: false }>;

/** Recorded responses are cut to about this many characters (the attempt's record is not a log). */
export const RESPONSE_MAX_CHARS = 500;
/** More than this is never read from a provider's answer. */
const READ_MAX_BYTES = 64 * 1024;

export interface HttpRequest {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly timeoutMs: number;
  /** The dispatcher's signal (shutdown); aborting it ends the request as a transient failure. */
  readonly signal?: AbortSignal | undefined;
  /** Who is called, for error texts: `Twilio`, `FCM token endpoint`, … */
  readonly what: string;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The body as text, at most 64 KiB of it. */
  readonly text: string;
}

/**
 * Connections kept open to each provider and reused (keep-alive): a dispatcher sending a thousand
 * SMS a second pays no connection set-up per message. Sockets per origin are not capped here: the
 * dispatcher's per-kind concurrency (SMS_CONCURRENCY, PUSH_CONCURRENCY) is the cap.
 */
const agents = {
  'http:': new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000, scheduling: 'lifo' }),
  'https:': new https.Agent({ keepAlive: true, keepAliveMsecs: 30_000, scheduling: 'lifo' }),
} as const;

/**
 * Sends one request (node:http with keep-alive; fetch's web streams cost a busy dispatcher much
 * of its CPU: docs/performance.md#what-was-tried). A network error, a timeout or an abort comes
 * back as a transient failure (the request may or may not have reached the provider, so it is
 * worth trying again, with the same idempotency key); it never throws. Redirects are not followed:
 * a provider API that redirects is misconfigured, and following one could carry credentials to
 * another host.
 */
export function httpRequest(request: HttpRequest): Promise<HttpResponse | Failure> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      resolve({ ok: false, kind: 'permanent', error: `${request.what}: invalid URL` });
      return;
    }
    const agent =
      url.protocol === 'https:' ? agents['https:'] : url.protocol === 'http:' ? agents['http:'] : null;
    if (!agent) {
      resolve({ ok: false, kind: 'permanent', error: `${request.what}: not an http(s) URL` });
      return;
    }
    let settled = false;
    const finish = (result: HttpResponse | Failure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const body = request.body === undefined ? undefined : Buffer.from(request.body, 'utf8');
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: request.method,
      agent,
      headers: {
        ...request.headers,
        ...(body === undefined ? {} : { 'content-length': String(body.length) }),
      },
    });
    const fail = (error: string, taken: 'no' | 'unknown') => {
      finish({ ok: false, kind: 'transient', error: `${request.what}: ${error}`, taken });
      req.destroy();
    };
    // A timeout leaves it unknown whether the provider took the message.
    const timer = setTimeout(
      () => fail(`no answer within ${request.timeoutMs} ms`, 'unknown'),
      request.timeoutMs,
    );
    const onAbort = () => fail('request aborted', 'unknown');
    if (request.signal?.aborted) {
      onAbort();
      return;
    }
    request.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => fail(networkError(error), neverConnected(error) ? 'no' : 'unknown'));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let total = 0;
      res.on('data', (chunk: Buffer) => {
        if (total >= READ_MAX_BYTES) return;
        chunks.push(chunk);
        total += chunk.length;
      });
      res.on('error', (error) => fail(networkError(error), 'unknown'));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) {
            try {
              headers.append(name, v);
            } catch {
              // A value Headers refuses (a provider's odd bytes): not one we read.
            }
          }
        }
        finish({
          status: res.statusCode ?? 0,
          headers,
          text: new TextDecoder().decode(Buffer.concat(chunks).subarray(0, READ_MAX_BYTES)),
        });
      });
    });
    req.end(body);
  });
}

export function isFailure(value: HttpResponse | Failure): value is Failure {
  return 'ok' in value;
}

/** Errors raised before a connection was made: the request never left. */
const BEFORE_CONNECTING = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function neverConnected(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && BEFORE_CONNECTING.has(code);
}

/** `connection refused (ECONNREFUSED)` rather than a bare system error. */
function networkError(error: unknown): string {
  const cause = error instanceof Error ? error : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    ETIMEDOUT: 'connection timed out',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
  };
  if (typeof code === 'string') return `${known[code] ?? 'network error'} (${code})`;
  const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
  return `network error: ${message}`;
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP date, as milliseconds from `now`.
 * Undefined when absent or unreadable; never negative.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only the HTTP-date forms; Date.parse alone would also read "7.5" or "2024" as a date.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The common rule for an HTTP answer that is not a success: 429 and 5xx are worth retrying
 * (after Retry-After when given); anything else (4xx, an unexpected redirect) will not get better.
 */
export function classifyStatus(
  status: number,
  headers: Headers,
  now: number = Date.now(),
): { kind: 'transient' | 'permanent'; retryAfterMs?: number } {
  if (status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(headers.get('retry-after'), now);
    return retryAfterMs === undefined ? { kind: 'transient' } : { kind: 'transient', retryAfterMs };
  }
  return { kind: 'permanent' };
}

/** Cuts a text to about `max` characters, saying how much was left out. */
export function truncate(text: string, max: number = RESPONSE_MAX_CHARS): string {
  const flat = text.trim();
  if (flat.length <= max) return flat;
  return `${flat.slice(0, max)}… (${flat.length - max} more characters)`;
}

/**
 * Replaces every occurrence of a secret in a text with `[redacted]`. Providers pass their
 * credentials (and derived forms: the Basic header, the access token) so that a provider echoing
 * one back in an error never puts it in the attempt's record.
 */
export function redact(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  // Longest first, so a secret containing another is removed whole.
  const list = [
    ...new Set([...secrets].filter((s): s is string => typeof s === 'string' && s.length >= 4)),
  ].sort((a, b) => b.length - a.length);
  for (const secret of list) out = out.split(secret).join('[redacted]');
  return out;
}

/** A URL as it may be shown: origin and path, no credentials, no query (it may hold an API key). */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/** Where gateways put their reason in a JSON answer, nested objects looked into (`error.message`). */
const REASON_KEYS = ['message', 'error_description', 'description', 'detail', 'reason', 'error', 'title'];
const REASON_MAX_CHARS = 200;

/**
 * A gateway's own words for why it did not take a message, to lead its error with ("account
 * suspended"): a reason field of its JSON answer, or a short one-line text answer that is not an
 * HTML page. Undefined when it said nothing readable. Capped, control characters removed.
 */
export function providerReason(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const json = tryParseJson(trimmed);
  const found = json === undefined ? plainReason(trimmed) : reasonIn(json, 0);
  if (found === undefined) return undefined;
  const flat = found.replace(/\p{Cc}+/gu, ' ').trim();
  return flat === '' ? undefined : truncate(flat, REASON_MAX_CHARS);
}

function reasonIn(value: unknown, depth: number): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return depth < 2 ? reasonIn(value[0], depth + 1) : undefined;
  if (!isRecord(value) || depth > 2) return undefined;
  for (const key of REASON_KEYS) {
    const found = reasonIn(value[key], depth + 1);
    if (found !== undefined && found.trim() !== '') return found;
  }
  return undefined;
}

/** A text answer short enough to be a reason, not markup. */
const plainReason = (text: string): string | undefined =>
  text.length <= REASON_MAX_CHARS && !text.includes('\n') && !/^</.test(text) ? text : undefined;

/** JSON.parse that answers undefined instead of throwing. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
