import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { deliveryList, problem, serviceInfo, session, staffUser, stats } from './data';

/** Handlers every test gets unless it overrides them with server.use(). */
export const defaultHandlers = [
  // Logged in as an admin, who may open every page; the auth tests override these.
  http.get('/api/session', () => HttpResponse.json(session())),
  http.get('/api/setup', () => HttpResponse.json({ needed: false })),
  // Password logins, no single sign-on: the login page's tests override it.
  http.get('/api/session/login-options', () => HttpResponse.json({ localLogin: true, sso: null })),
  http.get('/api/service', () => HttpResponse.json(serviceInfo)),
  // A call's detail lists its deliveries; by default it queued none.
  http.get('/api/deliveries', () => HttpResponse.json(deliveryList([]))),
  // History, when a test opens it without saying what it holds: no calls.
  http.get('/api/calls', () => HttpResponse.json({ items: [], nextCursor: null })),
  http.get('/api/calls/count', () => HttpResponse.json({ count: 0, more: false })),
  // Audit names people and offers them in its filter: the admin and one operator.
  http.get('/api/users', () =>
    HttpResponse.json({
      items: [
        staffUser(),
        staffUser({ id: 2, username: 'ana', displayName: 'Ana Operator', role: 'operator' }),
      ],
    }),
  ),
  // The registered schools (admins): none unless a test says.
  http.get('/api/schools', () => HttpResponse.json([])),
  // Send offers the schools one may send for: none, and every school one's own, unless a test says.
  http.get('/api/operations/schools', () => HttpResponse.json({ items: [], organisationWide: true })),
  // The Dashboard (the page after logging in), when a test lands there without saying: no calls.
  http.get('/api/stats', () => HttpResponse.json(stats({ rows: [] }))),
];

/** The network boundary: the console's fetches end here, nothing inside the app is mocked. */
export const server = setupServer(...defaultHandlers);

/** The requests the app sent, in order, for assertions on paths, query strings and bodies. */
export function recordRequests(): Request[] {
  const requests: Request[] = [];
  server.events.on('request:start', ({ request }) => {
    requests.push(request.clone());
  });
  return requests;
}

export const problemJson = (body: { status: number }, headers: Record<string, string> = {}) =>
  HttpResponse.json(body, {
    status: body.status,
    headers: { 'Content-Type': 'application/problem+json', ...headers },
  });

/**
 * A session that can end under way: once `end()` is called, GET /api/session answers 401 until
 * the user logs in again (POST /api/session). The test's own handlers read `ended` to refuse too.
 */
export function sessionThatEnds(): { readonly ended: boolean; end(): void } {
  let ended = false;
  server.use(
    http.get('/api/session', () =>
      ended ? problemJson(problem(401, 'Log in first.')) : HttpResponse.json(session()),
    ),
    http.post('/api/session', () => {
      ended = false;
      return HttpResponse.json(session());
    }),
  );
  return {
    get ended() {
      return ended;
    },
    end() {
      ended = true;
    },
  };
}
