/**
 * Firebase Cloud Messaging HTTP v1, topic messages. Authorisation is the OAuth2 JWT-bearer grant
 * (RFC 7523) with the service account's key: a JWT signed RS256 is exchanged at the token URL
 * for an access token, which is cached until shortly before it expires.
 */
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import {
  classifyStatus,
  displayUrl,
  type Failure,
  type HttpResponse,
  httpRequest,
  isFailure,
  isRecord,
  parseRetryAfter,
  redact,
  truncate,
  tryParseJson,
} from './http.js';
import type { ServiceAccount } from './service-account.js';
import type { PushMessage, PushProvider, SendResult } from './types.js';

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** FCM's limit for messages to topics, keys and values included (4096 for other targets). */
export const FCM_TOPIC_PAYLOAD_LIMIT = 2048;
/** QUOTA_EXCEEDED: FCM asks senders to back off; a minute is the least worth waiting. */
export const FCM_QUOTA_RETRY_MS = 60_000;
/** An access token is not used in its last minute (or last half, for short-lived ones). */
const TOKEN_MARGIN_MS = 60_000;
/** FCM's topic name charset (the `/topics/` prefix is not part of the name). */
const TOPIC = /^[a-zA-Z0-9\-_.~%]+$/;

const PERMANENT_FCM_CODES = new Set([
  'UNREGISTERED',
  'INVALID_ARGUMENT',
  'SENDER_ID_MISMATCH',
  'THIRD_PARTY_AUTH_ERROR',
]);
const TRANSIENT_FCM_CODES = new Set(['UNAVAILABLE', 'INTERNAL']);

export interface FcmOptions {
  readonly serviceAccount: ServiceAccount;
  readonly baseUrl: string;
  /** Defaults to the service account's token_uri. */
  readonly tokenUrl?: string | undefined;
  readonly timeoutMs: number;
  /** The clock, for token expiry and the JWT's iat/exp (tests move it). */
  readonly now?: () => number;
}

interface CachedToken {
  readonly value: string;
  readonly refreshAt: number;
}

const base64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/** A JWT for the JWT-bearer grant, signed RS256 with the service account's key. */
export function signServiceAccountJwt(
  account: ServiceAccount,
  key: KeyObject,
  audience: string,
  nowMs: number,
): string {
  const iat = Math.floor(nowMs / 1000);
  const header = { alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) };
  const claims = { iss: account.clientEmail, scope: FCM_SCOPE, aud: audience, iat, exp: iat + 3600 };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  return `${input}.${base64url(sign('sha256', Buffer.from(input), key))}`;
}

/** The bytes FCM counts against the topic limit: the notification's and the data's keys and values. */
export function fcmPayloadBytes(message: Pick<PushMessage, 'title' | 'body' | 'data'>): number {
  let bytes = Buffer.byteLength('title') + Buffer.byteLength(message.title);
  bytes += Buffer.byteLength('body') + Buffer.byteLength(message.body);
  for (const [key, value] of Object.entries(message.data))
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

export function createFcmProvider(options: FcmOptions): PushProvider {
  const account = options.serviceAccount;
  const now = options.now ?? Date.now;
  const tokenUrl = options.tokenUrl ?? account.tokenUri ?? 'https://oauth2.googleapis.com/token';
  const sendUrl = `${options.baseUrl}/v1/projects/${encodeURIComponent(account.projectId)}/messages:send`;
  const key = createPrivateKey(account.privateKey);
  // The key and the latest assertions and access tokens (a few: an answer may concern the one
  // before); none of them may reach a record.
  const recent: string[] = [];
  const remember = (secret: string) => {
    recent.push(secret);
    if (recent.length > 6) recent.shift();
  };
  let cached: CachedToken | undefined;
  let pending: Promise<CachedToken | Failure> | undefined;

  const clean = (text: string) => truncate(redact(text, [account.privateKey, ...recent]));

  async function fetchToken(signal?: AbortSignal): Promise<CachedToken | Failure> {
    const assertion = signServiceAccountJwt(account, key, tokenUrl, now());
    remember(assertion);
    const answer = await httpRequest({
      url: tokenUrl,
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString(),
      timeoutMs: options.timeoutMs,
      signal,
      what: 'FCM token endpoint',
    });
    if (isFailure(answer)) return answer;
    const json = tryParseJson(answer.text);
    const body = isRecord(json) ? json : {};
    if (answer.status >= 200 && answer.status < 300 && typeof body.access_token === 'string') {
      remember(body.access_token);
      const expiresIn = Number(body.expires_in);
      const lifetimeMs = (Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : 3600) * 1000;
      return {
        value: body.access_token,
        refreshAt: now() + lifetimeMs - Math.min(TOKEN_MARGIN_MS, lifetimeMs / 2),
      };
    }
    if (answer.status >= 200 && answer.status < 300) {
      return {
        ok: false,
        kind: 'permanent',
        error: 'FCM token endpoint answered without an access_token',
        status: answer.status,
        response: clean(answer.text),
      };
    }
    const { kind, retryAfterMs } = classifyStatus(answer.status, answer.headers, now());
    // invalid_grant, invalid_client, unauthorized_client: the key, the account or the clock is wrong.
    const reason = [body.error, body.error_description].filter((v) => typeof v === 'string').join(': ');
    return {
      ok: false,
      kind,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      error: clean(
        `FCM token endpoint ${kind === 'permanent' ? 'refused the service account' : 'unavailable'}${reason ? ` (${reason})` : ''} (HTTP ${answer.status})`,
      ),
      status: answer.status,
      response: clean(answer.text),
    };
  }

  /** The cached token, or one new token shared by every send waiting for it. */
  async function accessToken(signal?: AbortSignal): Promise<string | Failure> {
    if (cached && now() < cached.refreshAt) return cached.value;
    pending ??= fetchToken(signal).finally(() => {
      pending = undefined;
    });
    const result = await pending;
    if ('ok' in result) return result;
    cached = result;
    return result.value;
  }

  async function post(body: string, token: string, signal?: AbortSignal): Promise<HttpResponse | Failure> {
    return httpRequest({
      url: sendUrl,
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json; charset=utf-8',
        Accept: 'application/json',
      },
      body,
      timeoutMs: options.timeoutMs,
      signal,
      what: 'FCM',
    });
  }

  return {
    name: 'fcm',
    describe: () => `FCM project ${account.projectId} as ${account.clientEmail}, ${displayUrl(sendUrl)}`,

    async send(message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
      if (!TOPIC.test(message.topic)) {
        return {
          ok: false,
          kind: 'permanent',
          error: `invalid FCM topic name ${JSON.stringify(message.topic)}`,
        };
      }
      const bytes = fcmPayloadBytes(message);
      if (bytes > FCM_TOPIC_PAYLOAD_LIMIT) {
        return {
          ok: false,
          kind: 'permanent',
          error: `push payload too large: ${bytes} bytes of title, body and data; FCM allows at most ${FCM_TOPIC_PAYLOAD_LIMIT} bytes (2 KB) for topic messages`,
        };
      }
      const body = JSON.stringify({
        message: {
          topic: message.topic,
          notification: { title: message.title, body: message.body },
          ...(Object.keys(message.data).length > 0 ? { data: message.data } : {}),
        },
      });

      let token = await accessToken(signal);
      if (typeof token !== 'string') return token;
      let answer = await post(body, token, signal);
      if (!isFailure(answer) && answer.status === 401) {
        // Revoked or expired early: one new token, one more try.
        cached = undefined;
        token = await accessToken(signal);
        if (typeof token !== 'string') return token;
        answer = await post(body, token, signal);
      }
      if (isFailure(answer)) return answer;
      return interpret(answer);
    },
  };

  function interpret(answer: HttpResponse): SendResult {
    const json = tryParseJson(answer.text);
    if (answer.status >= 200 && answer.status < 300) {
      const name = isRecord(json) && typeof json.name === 'string' ? json.name : undefined;
      return {
        ok: true,
        ...(name ? { providerId: name } : {}),
        response: clean(`HTTP ${answer.status}${name ? `: ${name}` : ''}`),
      };
    }
    const error = isRecord(json) && isRecord(json.error) ? json.error : {};
    const details = Array.isArray(error.details) ? error.details : [];
    const fcmError = details.find(
      (d): d is Record<string, unknown> =>
        isRecord(d) &&
        typeof d['@type'] === 'string' &&
        d['@type'].endsWith('google.firebase.fcm.v1.FcmError'),
    );
    const errorCode = typeof fcmError?.errorCode === 'string' ? fcmError.errorCode : undefined;
    const status = typeof error.status === 'string' ? error.status : undefined;
    const detail = typeof error.message === 'string' ? error.message : undefined;
    const label = errorCode ?? status;
    const describeError = (prefix: string) =>
      clean(`${prefix}${label ? ` ${label}` : ''}${detail ? `: ${detail}` : ''} (HTTP ${answer.status})`);
    const base = { status: answer.status, response: clean(answer.text) };

    if (answer.status === 401 || answer.status === 403) {
      // After a fresh token: the service account lacks the permission or belongs to another project.
      return {
        ok: false,
        kind: 'permanent',
        error: describeError(`FCM refused the credentials (check the service account and project)`),
        ...base,
      };
    }
    if (errorCode === 'QUOTA_EXCEEDED' || answer.status === 429 || status === 'RESOURCE_EXHAUSTED') {
      const asked = parseRetryAfter(answer.headers.get('retry-after'), now()) ?? 0;
      return {
        ok: false,
        kind: 'transient',
        retryAfterMs: Math.max(FCM_QUOTA_RETRY_MS, asked),
        error: describeError('FCM quota exceeded:'),
        ...base,
      };
    }
    if (errorCode && PERMANENT_FCM_CODES.has(errorCode)) {
      return { ok: false, kind: 'permanent', error: describeError('FCM error'), ...base };
    }
    if (errorCode && TRANSIENT_FCM_CODES.has(errorCode)) {
      const retryAfterMs = parseRetryAfter(answer.headers.get('retry-after'), now());
      return {
        ok: false,
        kind: 'transient',
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        error: describeError('FCM error'),
        ...base,
      };
    }
    const { kind, retryAfterMs } = classifyStatus(answer.status, answer.headers, now());
    return {
      ok: false,
      kind,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      error: describeError('FCM error'),
      ...base,
    };
  }
}
