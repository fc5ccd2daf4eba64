import { callListSchema } from '@school/contract';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem } from '../testing/data';
import { problemJson, server } from '../testing/server';
import { ProblemError, request } from './api-client';

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
