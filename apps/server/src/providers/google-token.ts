/**
 * Google's OAuth2 access token for FCM, from google-auth-library: with a service-account key
 * (the JWT-bearer grant, RFC 7523: a JWT signed RS256 exchanged at the token endpoint), or, with
 * no key configured, Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
 * file, workload identity federation, or the metadata server on Google Cloud). The library caches
 * the token until its last minute and shares one refresh among concurrent sends.
 *
 * What stays ours: the library's requests go out through httpRequest (./http.ts) — the provider
 * timeout, no retries of the library's own (the outbox retries), network errors told as every
 * provider tells them — with Google's token URL replaced by the configured one (FCM_TOKEN_URL or
 * the key's token_uri: the tests' fake token endpoint); what a failure means for the delivery;
 * and the secrets (key, assertions, tokens) kept out of what is recorded.
 */
import type { AuthClient, GoogleAuth } from 'google-auth-library';
import { classifyStatus, type Failure, httpRequest, isFailure, isRecord, tryParseJson } from './http.js';
import type { ServiceAccount } from './service-account.js';

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
/** Where google-auth-library posts token requests. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** An access token is not used in its last minute. */
const TOKEN_MARGIN_MS = 60_000;
/** Form fields of token requests that are secrets (echoed back by a broken endpoint, say). */
const SECRET_FORM_FIELDS = ['assertion', 'refresh_token', 'client_secret', 'subject_token'];
const SECRET_ANSWER_FIELDS = ['access_token', 'id_token', 'refresh_token'];
/** The latest secrets kept for redaction: an answer may concern the one before. */
const SECRETS_KEPT = 6;

export interface GoogleTokenOptions {
  /** The key file's account; undefined: Application Default Credentials. */
  readonly serviceAccount?: ServiceAccount | undefined;
  /** Where requests for Google's token endpoint go instead; the JWT's audience too. */
  readonly tokenUrl?: string | undefined;
  /** The Firebase project (so that ADC never asks the metadata server for one). */
  readonly projectId: string;
  readonly timeoutMs: number;
  /** The clock for Retry-After dates. */
  readonly now?: () => number;
}

export interface GoogleToken {
  /** The cached access token, or a new one; a failure (never thrown) when none can be had. */
  get(): Promise<string | Failure>;
  /** Forgets the cached token (FCM answered 401): the next `get` obtains a new one. */
  expire(): void;
  /** The secrets to keep out of records: the key, the latest assertions and tokens. */
  secrets(): readonly string[];
  /** `as <client_email>`, or `with Application Default Credentials`. */
  readonly credentials: string;
}

type Library = typeof import('google-auth-library');

/** A request of the library's that ended without an HTTP answer, as httpRequest told it. */
class TokenRequestFailed extends Error {
  constructor(readonly failure: Failure) {
    super(failure.error);
  }
}

export function createGoogleToken(options: GoogleTokenOptions): GoogleToken {
  const now = options.now ?? Date.now;
  const recent: string[] = [];
  const remember = (secret: unknown) => {
    if (typeof secret !== 'string' || secret === '') return;
    recent.push(secret);
    if (recent.length > SECRETS_KEPT) recent.shift();
  };
  const account = options.serviceAccount;
  const clientOptions = {
    eagerRefreshThresholdMillis: TOKEN_MARGIN_MS,
    transporterOptions: { fetchImplementation: sendThrough(options, remember), retryConfig: { retry: 0 } },
    ...(options.tokenUrl !== undefined ? { additionalClaims: { aud: options.tokenUrl } } : {}),
  };
  // Loaded at the first push, not at start: a server without FCM never loads it.
  let library: Promise<Library> | undefined;
  let auth: GoogleAuth | undefined;
  let client: AuthClient | undefined;

  async function authClient(lib: Library): Promise<AuthClient> {
    if (client) return client;
    // With a key, the JWT client only: nothing is looked up, no metadata server is asked.
    if (account) {
      client = new lib.JWT({
        email: account.clientEmail,
        key: account.privateKey,
        keyId: account.privateKeyId,
        scopes: [FCM_SCOPE],
        ...clientOptions,
      });
      return client;
    }
    // ADC are looked for at the first push (not at start), and again after a failed look.
    auth ??= new lib.GoogleAuth({ scopes: [FCM_SCOPE], projectId: options.projectId, clientOptions });
    client = await auth.getClient();
    return client;
  }

  return {
    credentials: account ? `as ${account.clientEmail}` : 'with Application Default Credentials',
    async get() {
      let lib: Library | undefined;
      try {
        library ??= import('google-auth-library');
        lib = await library;
        const { token } = await (await authClient(lib)).getAccessToken();
        if (!token) throw new Error('the token endpoint answered without an access token');
        remember(token);
        return token;
      } catch (error) {
        return tokenFailure(error, lib, account !== undefined, now());
      }
    },
    expire() {
      client?.setCredentials({ ...client.credentials, expiry_date: 1 });
    },
    secrets: () => [...(account ? [account.privateKey] : []), ...recent],
  };
}

/**
 * The library's `fetch`: the request as fetch would send it, sent by httpRequest; Google's
 * token URL replaced by the configured one. Secrets in the form and the answer are remembered.
 */
function sendThrough(options: GoogleTokenOptions, remember: (secret: unknown) => void): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = request.url === GOOGLE_TOKEN_URL && options.tokenUrl ? options.tokenUrl : request.url;
    if (request.method !== 'POST' && request.method !== 'GET') {
      throw new Error(`unexpected ${request.method} request to ${url}`);
    }
    const body = request.method === 'POST' ? await request.text() : undefined;
    const form = new URLSearchParams(body ?? '');
    for (const field of SECRET_FORM_FIELDS) remember(form.get(field));
    const answer = await httpRequest({
      url,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      ...(body !== undefined ? { body } : {}),
      timeoutMs: options.timeoutMs,
      signal: init?.signal ?? undefined,
      what: 'FCM token endpoint',
    });
    if (isFailure(answer)) throw new TokenRequestFailed(answer);
    const json = tryParseJson(answer.text);
    if (isRecord(json)) for (const field of SECRET_ANSWER_FIELDS) remember(json[field]);
    if (answer.status < 200 || answer.status > 599) {
      throw new TokenRequestFailed({
        ok: false,
        kind: 'transient',
        error: `FCM token endpoint: unreadable answer (HTTP ${answer.status})`,
        status: answer.status,
      });
    }
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.text, { status: answer.status, headers: answer.headers });
  };
}

/**
 * What a failure to get a token means for the delivery: no answer (timeout, refused) is
 * transient, as httpRequest said; an answer is classified by its status (invalid_grant and the
 * like: the key, the account or the clock is wrong, permanent; 429 and 5xx transient); the
 * library's own verdicts (no credentials found, a file it cannot use) are permanent.
 */
function tokenFailure(error: unknown, lib: Library | undefined, keyed: boolean, now: number): Failure {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof TokenRequestFailed) return cause.failure;
  }
  const GaxiosError = lib?.gaxios.GaxiosError;
  if (GaxiosError && error instanceof GaxiosError && error.response) {
    const { status, headers, data } = error.response;
    const text = typeof data === 'string' ? data : (JSON.stringify(data) ?? '');
    const body = isRecord(data) ? data : {};
    const { kind, retryAfterMs } = classifyStatus(status, headers, now);
    // invalid_grant, invalid_client, unauthorized_client: the key, the account or the clock is wrong.
    const reason = [body.error, body.error_description].filter((v) => typeof v === 'string').join(': ');
    const refused = keyed ? 'refused the service account' : 'refused the default credentials';
    return {
      ok: false,
      kind,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      error: `FCM token endpoint ${kind === 'permanent' ? refused : 'unavailable'}${reason ? ` (${reason})` : ''} (HTTP ${status})`,
      status,
      response: text,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  // A request of the library's own (the metadata server's) that got no answer.
  if (GaxiosError && error instanceof GaxiosError) {
    return { ok: false, kind: 'transient', error: `FCM credentials: ${message}` };
  }
  return { ok: false, kind: 'permanent', error: `FCM credentials: ${message}` };
}
