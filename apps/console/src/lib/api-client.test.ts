import { bookSchema, CSRF_HEADER, CSRF_HEADER_VALUE, callListSchema } from '@school/contract';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { book, problem } from '../testing/data';
import { problemJson, recordRequests, server } from '../testing/server';
import { ProblemError, parseRetryAfter, request, upload } from './api-client';

describe('request', () => {
  it('sends the query without empty values and returns the checked body', async () => {
    let url: URL | undefined;
    server.use(
      http.get('/api/calls', ({ request: r }) => {
        url = new URL(r.url);
        return HttpResponse.json({ items: [], nextCursor: null });
      }),
    );
    const list = await request('/calls', {
      schema: callListSchema,
      query: { q: 'a b', ip: '', cursor: undefined },
    });
    expect(list).toEqual({ items: [], nextCursor: null });
    expect(url?.search).toBe('?q=a+b');
  });

  it('throws a ProblemError carrying the server problem', async () => {
    const body = problem(400, 'Invalid query.', { errors: { from: 'must be an ISO date' } });
    server.use(http.get('/api/calls', () => problemJson(body)));
    const error = await request('/calls', { schema: callListSchema }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProblemError);
    expect((error as ProblemError).problem).toEqual(body);
    expect((error as ProblemError).status).toBe(400);
  });

  it('makes a problem of an error that is not one, without showing an HTML page', async () => {
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.text('<html><body>Bad gateway</body></html>', {
          status: 502,
          statusText: 'Bad Gateway',
        }),
      ),
    );
    const error = (await request('/calls', { schema: callListSchema }).catch(
      (e: unknown) => e,
    )) as ProblemError;
    expect(error.problem).toEqual({ type: 'about:blank', title: 'Bad Gateway', status: 502 });
  });

  it('refuses an answer of the wrong shape', async () => {
    server.use(http.get('/api/calls', () => HttpResponse.json({ items: 'nope' })));
    const error = (await request('/calls', { schema: callListSchema }).catch(
      (e: unknown) => e,
    )) as ProblemError;
    expect(error.problem.title).toBe('Unexpected answer');
    expect(error.problem.detail).toMatch(
      /^The server's answer to GET \/api\/calls does not have the expected shape \(items/,
    );
  });

  it('reports a network failure as a problem', async () => {
    server.use(http.get('/api/calls', () => HttpResponse.error()));
    const error = (await request('/calls', { schema: callListSchema }).catch(
      (e: unknown) => e,
    )) as ProblemError;
    expect(error.problem.title).toBe('Network error');
  });
});

describe('the CSRF header', () => {
  it('goes with every state-changing request, bodyless ones included, and not with GET', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/things', () => HttpResponse.json({})),
      http.post('/api/things', () => HttpResponse.json({})),
      http.put('/api/things/1', () => HttpResponse.json({})),
      http.patch('/api/things/1', () => HttpResponse.json({})),
      http.delete('/api/things/1', () => new HttpResponse(null, { status: 204 })),
      http.post('/api/things/1/retry', () => HttpResponse.json({})),
    );
    const any = z.unknown();
    await request('/things', { schema: any });
    await request('/things', { method: 'POST', body: { a: 1 }, schema: any });
    await request('/things/1', { method: 'PUT', body: { a: 1 }, schema: any });
    await request('/things/1', { method: 'PATCH', body: { a: 1 }, schema: any });
    await request('/things/1', { method: 'DELETE', schema: z.undefined() });
    await request('/things/1/retry', { method: 'POST', schema: any });

    expect(CSRF_HEADER_VALUE).toBe('school-console');
    expect(requests.map((r) => [r.method, r.headers.get(CSRF_HEADER)])).toEqual([
      ['GET', null],
      ['POST', 'school-console'],
      ['PUT', 'school-console'],
      ['PATCH', 'school-console'],
      ['DELETE', 'school-console'],
      ['POST', 'school-console'],
    ]);
  });

  it('goes with an upload (XMLHttpRequest)', async () => {
    const requests = recordRequests();
    server.use(http.put('/api/books/:termId/:classId', () => HttpResponse.json(book())));
    await upload('/books/2026-1/7B', {
      schema: bookSchema,
      body: new Blob(['%PDF-1.7\n'], { type: 'application/pdf' }),
      contentType: 'application/pdf',
    });
    const [put] = requests;
    expect(put?.method).toBe('PUT');
    expect(put?.headers.get(CSRF_HEADER)).toBe(CSRF_HEADER_VALUE);
    expect(put?.headers.get('content-type')).toBe('application/pdf');
  });
});

describe('Retry-After', () => {
  it('is read from a refusal, in seconds', async () => {
    server.use(
      http.post('/api/session', () =>
        problemJson(problem(429, 'Too many failed logins.'), { 'Retry-After': '120' }),
      ),
    );
    const error = (await request('/session', { method: 'POST', body: {}, schema: z.unknown() }).catch(
      (e: unknown) => e,
    )) as ProblemError;
    expect(error.status).toBe(429);
    expect(error.retryAfter).toBe(120);
  });

  it('may be an HTTP date', () => {
    const now = Date.parse('2026-11-20T08:00:00Z');
    expect(parseRetryAfter('Fri, 20 Nov 2026 08:05:00 GMT', now)).toBe(300);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
