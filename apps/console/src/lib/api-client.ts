import { CSRF_HEADER, CSRF_HEADER_VALUE, type Problem, problemSchema } from '@school/contract';
import type { z } from 'zod';

/**
 * The one client of the JSON API (same origin, under /api). Every failure becomes a
 * `ProblemError` carrying an RFC 9457 problem: the server's own when it sent one, otherwise one
 * made here from what happened (network down, a proxy's HTML error page, an answer of the wrong
 * shape), so components have one kind of error to show.
 */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly problem: Problem;
  /** Seconds to wait before asking again, from the answer's Retry-After (a 429, a 503). */
  readonly retryAfter: number | undefined;

  constructor(problem: Problem, retryAfter?: number) {
    super(problem.detail ?? problem.title);
    this.problem = problem;
    this.retryAfter = retryAfter;
  }

  get status(): number {
    return this.problem.status;
  }
}

/** Query parameters; undefined and empty values are left out. */
export type QueryParams = Readonly<Record<string, string | number | undefined | null>>;

export function toSearchParams(query: QueryParams = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    params.set(key, String(value));
  }
  return params;
}

/** The path of an API resource with its query, for links (exports) and EventSource. */
export function apiPath(path: string, query?: QueryParams): string {
  const search = toSearchParams(query).toString();
  return `/api${path}${search ? `?${search}` : ''}`;
}

export interface RequestOptions<S extends z.ZodType> {
  /** Checks and types the answer: the contract's schema for this endpoint. */
  readonly schema: S;
  readonly method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly query?: QueryParams;
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
}

const networkProblem: Problem = {
  type: 'about:blank',
  title: 'Network error',
  status: 0,
  detail: 'The server could not be reached. Check the connection and try again.',
};

/**
 * The header the server asks of every state-changing request (the contract's CSRF_HEADER): a
 * custom header makes a cross-origin browser request preflight, which the server never approves.
 * GET is left alone, as links, exports and EventSource cannot send it.
 */
const csrfHeaders = (method: string): Record<string, string> =>
  method === 'GET' || method === 'HEAD' ? {} : { [CSRF_HEADER]: CSRF_HEADER_VALUE };

const absolute = (path: string): string =>
  // fetch in some environments (tests under Node) needs an absolute URL; the browser resolves it the same.
  typeof window === 'undefined' ? path : new URL(path, window.location.origin).toString();

export async function request<S extends z.ZodType>(
  path: string,
  options: RequestOptions<S>,
): Promise<z.output<S>> {
  const { schema, method = 'GET', query, body, signal } = options;
  const headers: Record<string, string> = {
    Accept: 'application/json, application/problem+json',
    ...csrfHeaders(method),
  };
  if (body !== undefined) headers['Content-Type'] = 'application/json';

  let response: Response;
  try {
    response = await fetch(absolute(apiPath(path, query)), {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      signal: signal ?? null,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ProblemError(networkProblem);
  }

  return checkAnswer(
    schema,
    `${method} /api${path}`,
    { ok: response.ok, status: response.status, statusText: response.statusText },
    await response.text(),
    response.headers.get('Retry-After'),
  );
}

/** Upload progress, in bytes; `total` is unknown until the browser says. */
export interface UploadProgress {
  readonly loaded: number;
  readonly total: number | undefined;
}

export interface UploadOptions<S extends z.ZodType> {
  readonly schema: S;
  readonly method?: 'PUT' | 'POST';
  readonly query?: QueryParams;
  /** Sent as is (a File streams from disk), with `contentType`. */
  readonly body: Blob;
  readonly contentType: string;
  readonly onProgress?: (progress: UploadProgress) => void;
  readonly signal?: AbortSignal | undefined;
}

/**
 * A request whose body is a file, sent with XMLHttpRequest because fetch cannot report upload
 * progress. Answers and failures are handled exactly as `request` handles them.
 */
export function upload<S extends z.ZodType>(path: string, options: UploadOptions<S>): Promise<z.output<S>> {
  const { schema, method = 'PUT', query, body, contentType, onProgress, signal } = options;
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, absolute(apiPath(path, query)));
    xhr.setRequestHeader('Accept', 'application/json, application/problem+json');
    xhr.setRequestHeader('Content-Type', contentType);
    for (const [name, value] of Object.entries(csrfHeaders(method))) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener('progress', (event) => {
      onProgress?.({ loaded: event.loaded, total: event.lengthComputable ? event.total : undefined });
    });
    xhr.addEventListener('load', () => {
      try {
        resolve(
          checkAnswer(
            schema,
            `${method} /api${path}`,
            xhr,
            xhr.responseText,
            xhr.getResponseHeader('Retry-After'),
          ),
        );
      } catch (error) {
        reject(error);
      }
    });
    xhr.addEventListener('error', () => reject(new ProblemError(networkProblem)));
    xhr.addEventListener('abort', () => reject(new DOMException('The upload was cancelled.', 'AbortError')));
    if (signal) {
      if (signal.aborted) {
        reject(new DOMException('The upload was cancelled.', 'AbortError'));
        return;
      }
      signal.addEventListener('abort', () => xhr.abort(), { once: true });
    }
    xhr.send(body);
  });
}

interface Answer {
  readonly ok?: boolean;
  readonly status: number;
  readonly statusText: string;
}

/** The checked body of a 2xx answer; a ProblemError for anything else. */
function checkAnswer<S extends z.ZodType>(
  schema: S,
  what: string,
  answer: Answer,
  text: string,
  retryAfter: string | null,
): z.output<S> {
  const json = parseJson(text);
  const ok = answer.ok ?? (answer.status >= 200 && answer.status < 300);
  if (!ok) throw new ProblemError(toProblem(answer, json, text), parseRetryAfter(retryAfter));

  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProblemError({
      type: 'about:blank',
      title: 'Unexpected answer',
      status: answer.status,
      detail: `The server's answer to ${what} does not have the expected shape${
        issue ? ` (${issue.path.join('.') || 'body'}: ${issue.message})` : ''
      }.`,
    });
  }
  return parsed.data;
}

/** Retry-After as seconds from now: a number of seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toProblem(response: Answer, json: unknown, text: string): Problem {
  const parsed = problemSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  // Not a problem document (a proxy's error page, a crash): say what we know, never render its HTML.
  const plain = text && !text.trimStart().startsWith('<') ? text.slice(0, 300) : undefined;
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    ...(plain ? { detail: plain } : {}),
  };
}

/** A 401: the request needed a session and had none (never logged in, expired, or ended). */
export const isUnauthorized = (error: unknown): boolean =>
  error instanceof ProblemError && error.status === 401;

/** The problem behind any error, for display. */
export function problemOf(error: unknown): Problem {
  if (error instanceof ProblemError) return error.problem;
  return {
    type: 'about:blank',
    title: 'Something went wrong',
    status: 0,
    detail: error instanceof Error ? error.message : String(error),
  };
}
