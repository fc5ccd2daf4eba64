import { type Problem, problemSchema } from '@school/contract';
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

  constructor(problem: Problem) {
    super(problem.detail ?? problem.title);
    this.problem = problem;
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
  readonly method?: 'GET' | 'POST';
  readonly query?: QueryParams;
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
}

const absolute = (path: string): string =>
  // fetch in some environments (tests under Node) needs an absolute URL; the browser resolves it the same.
  typeof window === 'undefined' ? path : new URL(path, window.location.origin).toString();

export async function request<S extends z.ZodType>(
  path: string,
  options: RequestOptions<S>,
): Promise<z.output<S>> {
  const { schema, method = 'GET', query, body, signal } = options;
  const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
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
    throw new ProblemError({
      type: 'about:blank',
      title: 'Network error',
      status: 0,
      detail: 'The server could not be reached. Check the connection and try again.',
    });
  }

  const text = await response.text();
  const json = parseJson(text);

  if (!response.ok) throw new ProblemError(toProblem(response, json, text));

  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProblemError({
      type: 'about:blank',
      title: 'Unexpected answer',
      status: response.status,
      detail: `The server's answer to ${method} /api${path} does not have the expected shape${
        issue ? ` (${issue.path.join('.') || 'body'}: ${issue.message})` : ''
      }.`,
    });
  }
  return parsed.data;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toProblem(response: Response, json: unknown, text: string): Problem {
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
