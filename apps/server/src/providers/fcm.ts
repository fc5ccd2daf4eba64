/**
 * Firebase Cloud Messaging HTTP v1, topic messages: the message built and checked against FCM's
 * limits, posted with Google's access token (./google-token.ts), and FCM's answer classified.
 */
import { createGoogleToken, type GoogleToken } from './google-token.js';
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

export { FCM_SCOPE } from './google-token.js';
/** FCM's limit for messages to topics, keys and values included (4096 for other targets). */
export const FCM_TOPIC_PAYLOAD_LIMIT = 2048;
/** QUOTA_EXCEEDED: FCM asks senders to back off; a minute is the least worth waiting. */
export const FCM_QUOTA_RETRY_MS = 60_000;
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
  /** The key file's account; undefined: Application Default Credentials. */
  readonly serviceAccount?: ServiceAccount | undefined;
  /** The Firebase project; defaults to the key's project_id, required without a key. */
  readonly projectId?: string | undefined;
  readonly baseUrl: string;
  /** Where Google's token endpoint is reached; defaults to the key's token_uri. */
  readonly tokenUrl?: string | undefined;
  readonly timeoutMs: number;
  /** The clock, for Retry-After dates (tests move it). */
  readonly now?: () => number;
}

/** Says what is wrong in a text that may echo a secret, cut to a record's size. */
type Clean = (text: string) => string;

export function createFcmProvider(options: FcmOptions): PushProvider {
  const now = options.now ?? Date.now;
  const projectId = options.projectId ?? options.serviceAccount?.projectId;
  if (!projectId) throw new Error('FCM needs a project id: FCM_PROJECT_ID, or a service-account key');
  const sendUrl = `${options.baseUrl}/v1/projects/${encodeURIComponent(projectId)}/messages:send`;
  const token = createGoogleToken({
    serviceAccount: options.serviceAccount,
    tokenUrl: options.tokenUrl ?? options.serviceAccount?.tokenUri,
    projectId,
    timeoutMs: options.timeoutMs,
    now,
  });
  const clean: Clean = (text) => truncate(redact(text, token.secrets()));
  const post = (body: string, signal: AbortSignal | undefined) =>
    postWithToken(token, { url: sendUrl, body, timeoutMs: options.timeoutMs, signal }, clean);

  return {
    name: 'fcm',
    describe: () => `FCM project ${projectId} ${token.credentials}, ${displayUrl(sendUrl)}`,
    async send(message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
      const body = fcmMessageBody(message);
      if (typeof body !== 'string') return body;
      const answer = await post(body, signal);
      return isFailure(answer) ? answer : classifyFcmAnswer(answer, clean, now());
    },
  };
}

/** The bytes FCM counts against the topic limit: the notification's and the data's keys and values. */
export function fcmPayloadBytes(message: Pick<PushMessage, 'title' | 'body' | 'data'>): number {
  let bytes = Buffer.byteLength('title') + Buffer.byteLength(message.title);
  bytes += Buffer.byteLength('body') + Buffer.byteLength(message.body);
  for (const [key, value] of Object.entries(message.data))
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

/** The v1 `messages:send` body of a topic message, or why FCM would refuse it (nothing is sent). */
export function fcmMessageBody(message: PushMessage): string | Failure {
  if (!TOPIC.test(message.topic)) {
    return { ok: false, kind: 'permanent', error: `invalid FCM topic name ${JSON.stringify(message.topic)}` };
  }
  const bytes = fcmPayloadBytes(message);
  if (bytes > FCM_TOPIC_PAYLOAD_LIMIT) {
    return {
      ok: false,
      kind: 'permanent',
      error: `push payload too large: ${bytes} bytes of title, body and data; FCM allows at most ${FCM_TOPIC_PAYLOAD_LIMIT} bytes (2 KB) for topic messages`,
    };
  }
  return JSON.stringify({
    message: {
      topic: message.topic,
      notification: { title: message.title, body: message.body },
      ...(Object.keys(message.data).length > 0 ? { data: message.data } : {}),
    },
  });
}

/**
 * Posts `body` with the access token; on a 401 (a token revoked or expired early) once more with
 * a new one. A token that cannot be had is the send's failure, nothing posted.
 */
async function postWithToken(
  token: GoogleToken,
  request: { url: string; body: string; timeoutMs: number; signal: AbortSignal | undefined },
  clean: Clean,
): Promise<HttpResponse | Failure> {
  const once = async (): Promise<HttpResponse | Failure> => {
    const value = await token.get();
    if (typeof value !== 'string') return cleanFailure(value, clean);
    return httpRequest({
      url: request.url,
      method: 'POST',
      headers: {
        Authorization: `Bearer ${value}`,
        'Content-Type': 'application/json; charset=utf-8',
        Accept: 'application/json',
      },
      body: request.body,
      timeoutMs: request.timeoutMs,
      signal: request.signal,
      what: 'FCM',
    });
  };
  const answer = await once();
  if (isFailure(answer) || answer.status !== 401) return answer;
  token.expire();
  return once();
}

function cleanFailure(failure: Failure, clean: Clean): Failure {
  return {
    ...failure,
    error: clean(failure.error),
    ...(failure.response !== undefined ? { response: clean(failure.response) } : {}),
  };
}

/** What FCM's answer to a send means: sent, or a failure worth retrying or not. */
export function classifyFcmAnswer(answer: HttpResponse, clean: Clean, now: number): SendResult {
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
      isRecord(d) && typeof d['@type'] === 'string' && d['@type'].endsWith('google.firebase.fcm.v1.FcmError'),
  );
  const errorCode = typeof fcmError?.errorCode === 'string' ? fcmError.errorCode : undefined;
  const status = typeof error.status === 'string' ? error.status : undefined;
  const detail = typeof error.message === 'string' ? error.message : undefined;
  const label = errorCode ?? status;
  const describeError = (prefix: string) =>
    clean(`${prefix}${label ? ` ${label}` : ''}${detail ? `: ${detail}` : ''} (HTTP ${answer.status})`);
  const base = { status: answer.status, response: clean(answer.text) };
  const retryAfter = () => parseRetryAfter(answer.headers.get('retry-after'), now);

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
    return {
      ok: false,
      kind: 'transient',
      retryAfterMs: Math.max(FCM_QUOTA_RETRY_MS, retryAfter() ?? 0),
      error: describeError('FCM quota exceeded:'),
      ...base,
    };
  }
  if (errorCode && PERMANENT_FCM_CODES.has(errorCode)) {
    return { ok: false, kind: 'permanent', error: describeError('FCM error'), ...base };
  }
  const { kind, retryAfterMs } =
    errorCode && TRANSIENT_FCM_CODES.has(errorCode)
      ? { kind: 'transient' as const, retryAfterMs: retryAfter() }
      : classifyStatus(answer.status, answer.headers, now);
  return {
    ok: false,
    kind,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    error: describeError('FCM error'),
    ...base,
  };
}
