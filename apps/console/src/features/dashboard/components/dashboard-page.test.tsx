import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { operatorSession, school, serviceInfo, stats } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { recordRequests, server } from '../../../testing/server';

const statsRequests = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/stats').map((r) => new URL(r.url).searchParams);

/** The start of the hour `back` hours before the hour `to` falls in. */
const hourBefore = (to: string, back: number) =>
  new Date(Math.floor(Date.parse(to) / 3_600_000) * 3_600_000 - back * 3_600_000).toISOString();

/** A day of calls: AuthCode and pushNoti, errors, an unknown operation, latency and deliveries. */
function answerStats() {
  return http.get('/api/stats', ({ request }) => {
    const q = new URL(request.url).searchParams;
    const to = q.get('to') ?? '';
    const from = q.get('from') ?? '';
    const hour = (back: number) => hourBefore(to, back);
    return HttpResponse.json(
      stats({
        from,
        to,
        bucket: q.get('bucket') === 'day' ? 'day' : 'hour',
        rows: [
          { bucket: hour(3), operation: 'AuthCode', outcome: 'ok', count: 8 },
          { bucket: hour(3), operation: 'AuthCode', outcome: 'client-error', count: 2 },
          { bucket: hour(1), operation: 'pushNoti', outcome: 'ok', count: 2 },
          { bucket: hour(1), operation: null, outcome: 'client-error', count: 3 },
        ],
        latency: [
          { bucket: hour(3), count: 10, p50Ms: 12.4, p95Ms: 84 },
          { bucket: hour(1), count: 5, p50Ms: 3.2, p95Ms: 9 },
        ],
        overallLatency: { p50Ms: 8.5, p95Ms: 80 },
        statuses: [
          { status: 404, outcome: 'client-error', count: 3 },
          { status: 416, outcome: 'client-error', count: 2 },
        ],
        errors: [
          {
            operation: null,
            status: 404,
            outcome: 'client-error',
            error: 'No such operation: Nope.',
            count: 3,
          },
          {
            operation: 'AuthCode',
            status: 416,
            outcome: 'client-error',
            error: '<b>Range</b> not satisfiable',
            count: 2,
          },
        ],
        otherErrors: 0,
        deliveries: [
          { bucket: hour(3), sent: 5, logged: 0, dead: 1, expired: 0, waiting: 0, failedAttempts: 4 },
        ],
      }),
    );
  });
}

/**
 * Stats for the period asked, and for the period before it (asked by day, ending where the
 * period starts): `current` and `before` are each a list of [outcome, count] of AuthCode calls.
 */
function answerPeriods(
  current: [outcome: 'ok' | 'client-error' | 'server-error', count: number][],
  before: [outcome: 'ok' | 'client-error' | 'server-error', count: number][],
  deliveries: { dead: number; waiting: number } = { dead: 0, waiting: 0 },
) {
  return http.get('/api/stats', ({ request }) => {
    const q = new URL(request.url).searchParams;
    const to = q.get('to') ?? '';
    const from = q.get('from') ?? '';
    const isBefore = Date.parse(to) < Date.now() - 3_600_000;
    const bucket = hourBefore(to, 2);
    const rows = (isBefore ? before : current).map(([outcome, count]) => ({
      bucket,
      operation: 'AuthCode',
      outcome,
      count,
    }));
    return HttpResponse.json(
      stats({
        from,
        to,
        bucket: q.get('bucket') === 'day' ? 'day' : 'hour',
        rows,
        deliveries: isBefore
          ? []
          : [{ bucket, sent: 10, logged: 0, expired: 0, failedAttempts: 0, ...deliveries }],
      }),
    );
  });
}

describe('Dashboard: is everything fine?', () => {
  it('says all is well, with the period in figures against the one before', async () => {
    server.use(
      answerPeriods(
        [
          ['ok', 98],
          ['client-error', 2],
        ],
        [
          ['ok', 97],
          ['client-error', 3],
        ],
      ),
    );
    renderApp('/dashboard');
    const verdict = await screen.findByRole('region', { name: 'All is well.' }, { timeout: 5000 });
    await waitFor(() =>
      expect(verdict).toHaveTextContent(
        '100 calls in the last 24 hours, 2.0% refused or failed (3.0% the period before).',
      ),
    );
    expect(within(verdict).queryByRole('listitem')).not.toBeInTheDocument();
  });

  it('lists what needs attention, each with a link to where to look', async () => {
    server.use(
      answerPeriods(
        [
          ['ok', 80],
          ['client-error', 15],
          ['server-error', 5],
        ],
        [
          ['ok', 99],
          ['client-error', 1],
        ],
        { dead: 2, waiting: 0 },
      ),
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              ...serviceInfo.providers.sms,
              name: 'twilio',
              id: 'twilio',
              circuit: {
                state: 'open',
                since: new Date().toISOString(),
                until: new Date(Date.now() + 30_000).toISOString(),
              },
            },
          },
        }),
      ),
    );
    const { user, location } = renderApp('/dashboard');
    const verdict = await screen.findByRole(
      'region',
      { name: '4 things need attention.' },
      { timeout: 5000 },
    );
    const items = within(verdict)
      .getAllByRole('listitem')
      .map((li) => li.textContent);
    expect(items).toEqual([
      'The SMS provider (twilio) is failing: nothing is sent to it for now. See the providers',
      '5 calls failed inside the server. List them',
      'Errors are up: 20% of calls, against 1.0% the period before. List the refused calls',
      '2 deliveries could not be sent (dead). Retry them',
    ]);
    await user.click(within(verdict).getByRole('link', { name: 'Retry them' }));
    expect(location().pathname).toBe('/deliveries');
    expect(new URLSearchParams(location().search).get('status')).toBe('dead');
  });
  it('says a provider refuses every message, why and what to do, and offers no retry of the dead meanwhile', async () => {
    server.use(
      answerPeriods([['ok', 12]], [['ok', 12]], { dead: 1, waiting: 0 }),
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              ...serviceInfo.providers.sms,
              name: 'http',
              id: 'http',
              refusing: {
                reason: 'account suspended',
                status: 403,
                since: new Date(Date.now() - 1000).toISOString(),
                refusals: 12,
                attempts: 12,
              },
            },
          },
        }),
      ),
    );
    renderApp('/dashboard');
    const verdict = await screen.findByRole(
      'region',
      { name: '2 things need attention.' },
      { timeout: 5000 },
    );
    const [provider, dead] = within(verdict).getAllByRole('listitem');
    expect(provider).toHaveTextContent(
      /^The SMS provider \(http\) is refusing: account suspended \(HTTP 403\) since .+, 12 of the last 12\. Fix the account with the provider; retries will not help until then\. See the providers$/,
    );
    expect(dead).toHaveTextContent(
      '1 delivery could not be sent (dead): sending them again will not help while the SMS provider (http) refuses; fix its account first. See them',
    );
    expect(within(verdict).queryByRole('link', { name: 'Retry them' })).not.toBeInTheDocument();
  });
});

describe('Dashboard: a new console', () => {
  it('shows an admin the first steps while no school is registered, and not once one is', async () => {
    const view = renderApp('/dashboard');
    const steps = await screen.findByRole('region', { name: 'Getting started' }, { timeout: 5000 });
    expect(within(steps).getByRole('link', { name: 'Register a school' })).toHaveAttribute(
      'href',
      '/schools',
    );
    expect(within(steps).getByRole('link', { name: 'Upload a book' })).toHaveAttribute('href', '/books');
    expect(within(steps).getByRole('link', { name: 'Send a test code' })).toHaveAttribute(
      'href',
      '/send/AuthCode',
    );
    view.unmount();

    server.use(http.get('/api/schools', () => HttpResponse.json([school()])));
    renderApp('/dashboard');
    await screen.findByRole('heading', { name: 'Dashboard', level: 1 });
    await waitFor(() => expect(screen.queryByRole('region', { name: 'Getting started' })).toBeNull());
  });

  it('never shows an operator the first steps (they may not register schools)', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/session', () => HttpResponse.json(operatorSession())));
    renderApp('/dashboard');
    await screen.findByRole('heading', { name: 'Dashboard', level: 1 });
    expect(screen.queryByRole('region', { name: 'Getting started' })).toBeNull();
    expect(requests.some((r) => new URL(r.url).pathname === '/api/schools')).toBe(false);
  });
});

describe('Dashboard', () => {
  it('names each chart and says in words what it shows', async () => {
    const requests = recordRequests();
    server.use(answerStats());
    const { user } = renderApp('/dashboard');

    // The first test loads the page's code (lazily, with uPlot): it may take a while.
    const calls = await screen.findByRole(
      'figure',
      { name: 'Calls per hour by operation' },
      { timeout: 5000 },
    );
    expect(calls).toHaveAccessibleDescription(
      '15 calls in the last 24 hours: AuthCode 10, Unknown operation 3, pushNoti 2.',
    );
    const errors = screen.getByRole('figure', { name: 'Errors per hour' });
    expect(errors).toHaveAccessibleDescription(
      /^Error rate 33% in the last 24 hours \(5 client errors, 0 server errors\); highest 60% in the hour from /,
    );
    expect(screen.getByRole('figure', { name: 'Time to answer per hour' })).toHaveAccessibleDescription(
      /Slowest hour: 95 % within 84 ms\./,
    );
    expect(screen.getByRole('figure', { name: 'Deliveries queued per hour' })).toHaveAccessibleDescription(
      '6 SMS and pushes queued in the last 24 hours: 5 sent, 1 dead; 4 failed attempts along the way.',
    );

    const [first] = statsRequests(requests);
    expect(first?.get('bucket')).toBe('hour');
    const span = Date.parse(first?.get('to') ?? '') - Date.parse(first?.get('from') ?? '');
    expect(span).toBe(24 * 3_600_000);

    await user.selectOptions(screen.getByLabelText('Period'), 'Last 7 days');
    await user.selectOptions(screen.getByLabelText('Group by'), 'Day');
    await waitFor(() => {
      const last = statsRequests(requests).at(-1);
      expect(last?.get('bucket')).toBe('day');
      expect(Date.parse(last?.get('to') ?? '') - Date.parse(last?.get('from') ?? '')).toBe(7 * 86_400_000);
    });
    expect(await screen.findByRole('figure', { name: 'Calls per day by operation' })).toBeInTheDocument();
  });

  it('explains unknown operations and links to them in History', async () => {
    const requests = recordRequests();
    server.use(answerStats());
    const { user, location } = renderApp('/dashboard');
    const note = await screen.findByRole('note');
    expect(note).toHaveTextContent(
      'Unknown operation: 3 calls to an address or operation name this service does not have',
    );
    await user.click(within(note).getByRole('link', { name: 'See them in History' }));
    const asked = statsRequests(requests)[0];
    expect(location().pathname).toBe('/history');
    const search = new URLSearchParams(location().search);
    expect(search.get('operation')).toBe('(unknown)');
    expect(search.get('from')).toBe(asked?.get('from'));
    expect(search.get('to')).toBe(asked?.get('to'));
  });

  it('lists each figure of a chart with a link to its calls in History', async () => {
    const requests = recordRequests();
    server.use(answerStats());
    const { user, location } = renderApp('/dashboard');
    const calls = await screen.findByRole('figure', { name: 'Calls per hour by operation' });
    await user.click(within(calls).getByText('Show the figures'));
    const table = within(calls).getByRole('table');
    const to = statsRequests(requests)[0]?.get('to') ?? '';
    // AuthCode's 8 OK calls and 2 client errors, three hours ago.
    const link = within(table).getByRole('link', { name: /^10 AuthCode, / });
    await user.click(link);
    const search = new URLSearchParams(location().search);
    expect(location().pathname).toBe('/history');
    expect(search.get('operation')).toBe('AuthCode');
    expect(search.get('from')).toBe(hourBefore(to, 3));
    expect(search.get('to')).toBe(hourBefore(to, 2));
  });

  it('breaks errors down by status and by message, each message linking to its calls', async () => {
    server.use(answerStats());
    const { user, location } = renderApp('/dashboard');
    const section = await screen.findByRole('region', { name: 'Errors by status and message' });
    const byStatus = within(section).getByRole('table', { name: 'By status' });
    expect(
      within(byStatus)
        .getAllByRole('row')
        .map((r) => r.textContent),
    ).toEqual([
      'StatusMeaningCalls',
      "404Refused: the caller's request was wrong3",
      "416Refused: the caller's request was wrong2",
    ]);
    const messages = within(section).getByRole('table', { name: 'Most frequent messages' });
    // Text, never HTML; led by its reason in plain words.
    const recorded = within(messages).getByText('<b>Range</b> not satisfiable');
    expect(recorded.closest('td')).toHaveTextContent(/^Range not satisfiable<b>Range<\/b> not satisfiable$/);
    expect(within(messages).getAllByText('refused')).toHaveLength(2);
    expect(within(messages).getByText('Unknown operation')).toBeInTheDocument();
    await user.click(within(messages).getByRole('link', { name: '2 client errors of AuthCode in History' }));
    const search = new URLSearchParams(location().search);
    expect(search.get('operation')).toBe('AuthCode');
    expect(search.get('outcome')).toBe('client-error');
  });

  it('says when the period had no calls', async () => {
    server.use(http.get('/api/stats', () => HttpResponse.json(stats({ rows: [] }))));
    renderApp('/dashboard');
    expect(await screen.findByText('No calls in this period.')).toBeInTheDocument();
  });
});
