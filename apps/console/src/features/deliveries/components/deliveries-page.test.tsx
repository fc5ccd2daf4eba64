import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deadPush, delivery, deliveryList, problem, serviceInfo } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const listRequests = (requests: Request[]) =>
  requests
    .filter((r) => r.method === 'GET' && new URL(r.url).pathname === '/api/deliveries')
    .map((r) => new URL(r.url).searchParams);

const counts = { pending: 3, sending: 1, sent: 120, dead: 2, expired: 4 };

describe('Deliveries', () => {
  it('shows the outbox as rows, with the count of every status', async () => {
    server.use(
      http.get('/api/deliveries', () =>
        HttpResponse.json(
          deliveryList(
            [
              deadPush({ id: 13, callId: 9 }),
              delivery({ id: 14, callId: 10, provider: 'log', status: 'logged', providerId: null }),
              delivery({
                id: 12,
                callId: 7,
                status: 'pending',
                attempts: 2,
                nextAttemptAt: '2026-11-20T08:16:30.000Z',
                lastError: 'Twilio 429: Too Many Requests',
              }),
            ],
            { ...counts, logged: 126 },
          ),
        ),
      ),
    );
    renderApp('/deliveries');
    const table = await screen.findByRole('table', { name: 'Deliveries, newest first' });
    expect(
      within(table)
        .getAllByRole('columnheader')
        .map((th) => th.textContent),
    ).toEqual([
      'ID',
      'Kind',
      'Recipient',
      'Message',
      'Status',
      'Attempts',
      'Queued',
      'Next attempt',
      'Last error',
      'Call',
      'Actions',
    ]);
    const [, push, logged, sms] = within(table).getAllByRole('row');
    if (!push || !logged || !sms) throw new Error('missing rows');
    const cells = within(push).getAllByRole('cell');
    expect(cells[1]).toHaveTextContent('Push via fcm');
    expect(cells[2]).toHaveTextContent('school-northfield');
    expect(cells[3]).toHaveTextContent('New homework There is a new homework notification for you.');
    expect(cells[4]).toHaveTextContent('Dead');
    expect(cells[5]).toHaveTextContent('8');
    expect(cells[8]).toHaveTextContent('FCM 503: The service is currently unavailable.');
    expect(within(push).getByRole('link', { name: 'Delivery #13' })).toHaveAttribute(
      'href',
      '/deliveries/13',
    );
    expect(within(push).getByRole('link', { name: 'Call #9' })).toHaveAttribute('href', '/history/9');
    expect(within(push).getByRole('button', { name: 'Retry delivery 13' })).toBeInTheDocument();

    // The log provider's: its own status, never "Sent".
    const loggedCells = within(logged).getAllByRole('cell');
    expect(loggedCells[1]).toHaveTextContent('SMS via log');
    expect(loggedCells[4]).toHaveTextContent('Logged, not sent');
    expect(loggedCells[4]).not.toHaveTextContent('Sent');

    const smsCells = within(sms).getAllByRole('cell');
    expect(smsCells[1]).toHaveTextContent('SMS');
    expect(smsCells[3]).toHaveTextContent('Your verification code is ***');
    expect(smsCells[4]).toHaveTextContent('Pending');
    expect(smsCells[6]?.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:15:30.000Z');
    expect(smsCells[7]?.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:16:30.000Z');
    expect(smsCells[8]).toHaveTextContent('Twilio 429');
    // Only a dead delivery can be retried.
    expect(within(sms).queryByRole('button', { name: /Retry/ })).not.toBeInTheDocument();

    const byStatus = screen.getByRole('list', { name: 'All deliveries by status' });
    expect(
      within(byStatus)
        .getAllByRole('link')
        .map((a) => a.textContent),
    ).toEqual(['Pending 3', 'Sending 1', 'Sent 120', 'Logged, not sent 126', 'Dead 2', 'Expired 4']);
    expect(within(byStatus).getByRole('link', { name: 'Logged, not sent 126' })).toHaveAttribute(
      'href',
      '/deliveries?status=logged',
    );
    expect(within(byStatus).getByRole('link', { name: 'Dead 2' })).toHaveAttribute(
      'href',
      '/deliveries?status=dead',
    );
    expect(screen.getByText('All 3 deliveries are shown.')).toBeInTheDocument();
  });

  it('says a waiting SMS is paused and until when while its provider keeps failing, and why in plain words', async () => {
    server.use(
      http.get('/api/deliveries', () =>
        HttpResponse.json(
          deliveryList(
            [
              delivery({
                id: 21,
                provider: 'http',
                status: 'pending',
                attempts: 3,
                nextAttemptAt: '2026-11-20T08:16:30.000Z',
                sentAt: null,
                lastError: 'SMS gateway refused the message: Account suspended (HTTP 403)',
              }),
            ],
            counts,
          ),
        ),
      ),
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              ...serviceInfo.providers.sms,
              id: 'http',
              circuit: {
                state: 'open',
                since: '2026-11-20T08:16:00.000Z',
                until: '2026-11-20T08:18:00.000Z',
              },
            },
          },
        }),
      ),
    );
    renderApp('/deliveries');
    const row = (await screen.findByRole('link', { name: /Delivery #21/ }, { timeout: 5000 })).closest(
      'tr',
    ) as HTMLElement;
    await waitFor(() => expect(row).toHaveTextContent('Paused until'));
    expect(row.querySelector('.paused time')).toHaveAttribute('datetime', '2026-11-20T08:18:00.000Z');
    expect(row).toHaveTextContent('The SMS gateway refused it: “Account suspended”');
  });

  it('leaves out the logged count when nothing was logged', async () => {
    server.use(http.get('/api/deliveries', () => HttpResponse.json(deliveryList([deadPush()], counts))));
    renderApp('/deliveries');
    const byStatus = await screen.findByRole('list', { name: 'All deliveries by status' });
    expect(
      within(byStatus)
        .getAllByRole('link')
        .map((a) => a.textContent),
    ).toEqual(['Pending 3', 'Sending 1', 'Sent 120', 'Dead 2', 'Expired 4']);
  });

  it('searches by recipient, time range and provider, kept in the URL and sent to the API', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/deliveries', () => HttpResponse.json(deliveryList([deadPush()], counts))));
    const { user, location } = renderApp('/deliveries');
    await screen.findByRole('table');

    await user.selectOptions(screen.getByLabelText('Provider'), 'Log only, nothing sent (log)');
    await waitFor(() => expect(location().search).toBe('?provider=log'));

    const recipient = screen.getByLabelText('Recipient or topic');
    expect(recipient).toHaveAccessibleDescription(/Part of a phone number or push topic/);
    await user.type(recipient, ' 07911 123456 ');
    await user.type(screen.getByLabelText('Queued from'), '2026-11-20T08:00');
    await user.type(screen.getByLabelText('Queued before'), '2026-11-20T09:30{Enter}');
    const from = new Date('2026-11-20T08:00').toISOString();
    const to = new Date('2026-11-20T09:30').toISOString();
    await waitFor(() =>
      expect(Object.fromEntries(new URLSearchParams(location().search))).toEqual({
        provider: 'log',
        recipient: '07911 123456',
        from,
        to,
      }),
    );
    await waitFor(() =>
      expect(Object.fromEntries(listRequests(requests).at(-1) ?? [])).toEqual({
        provider: 'log',
        recipient: '07911 123456',
        from,
        to,
        limit: '50',
      }),
    );
    // A range that ends in the past gets nothing new: the list stops refreshing and says why.
    expect(screen.getByText('Not refreshing: this view ends in the past.')).toBeInTheDocument();
  });

  it('refuses a range that ends before it starts, without a request', async () => {
    const requests = recordRequests();
    const { user, location } = renderApp('/deliveries');
    await screen.findByText('Nothing has been queued yet.');
    const before = listRequests(requests).length;
    await user.type(screen.getByLabelText('Queued from'), '2026-11-20T09:00');
    await user.type(screen.getByLabelText('Queued before'), '2026-11-20T08:00');
    await user.click(screen.getByRole('button', { name: 'Apply filters' }));
    expect(await screen.findByText('“To” must be after “From”.')).toBeInTheDocument();
    expect(location().search).toBe('');
    expect(listRequests(requests)).toHaveLength(before);
  });

  it('puts the status and kind filters in the URL and in the request', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/deliveries', () => HttpResponse.json(deliveryList([deadPush()], counts))));
    const { user, location } = renderApp('/deliveries');
    await screen.findByRole('table');
    expect(listRequests(requests)[0]?.toString()).toBe('limit=50');

    await user.selectOptions(screen.getByLabelText('Status'), 'Dead');
    await waitFor(() => expect(location().search).toBe('?status=dead'));
    await waitFor(() => expect(listRequests(requests).at(-1)?.toString()).toBe('status=dead&limit=50'));

    await user.selectOptions(screen.getByLabelText('Kind'), 'Push');
    await waitFor(() => expect(location().search).toBe('?status=dead&kind=push'));
    await waitFor(() =>
      expect(listRequests(requests).at(-1)?.toString()).toBe('status=dead&kind=push&limit=50'),
    );
    expect(screen.getByRole('link', { name: 'Dead 2' })).toHaveAttribute('aria-current', 'true');

    // A count is a link to that status, keeping the kind.
    await user.click(screen.getByRole('link', { name: 'Expired 4' }));
    await waitFor(() => expect(location().search).toBe('?status=expired&kind=push'));
    expect(screen.getByLabelText('Status')).toHaveValue('expired');

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(location().search).toBe(''));
    expect(screen.getByLabelText('Kind')).toHaveValue('');
  });

  it('reads the filters from a shared link and drops what the API would refuse', async () => {
    const requests = recordRequests();
    renderApp('/deliveries?status=dead&kind=fax');
    expect(await screen.findByText('No deliveries match these filters.')).toBeInTheDocument();
    expect(screen.getByLabelText('Status')).toHaveValue('dead');
    expect(listRequests(requests)[0]?.toString()).toBe('status=dead&limit=50');
  });

  it('loads older deliveries with the cursor of the previous page', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/deliveries', ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        return HttpResponse.json(
          cursor === '13'
            ? deliveryList([delivery({ id: 12 })], counts)
            : deliveryList([deadPush({ id: 13 })], counts, '13'),
        );
      }),
    );
    const { user } = renderApp('/deliveries?kind=sms');
    await screen.findByRole('link', { name: 'Delivery #13' });
    await user.click(screen.getByRole('button', { name: 'Load more' }));
    expect(await screen.findByRole('link', { name: 'Delivery #12' })).toBeInTheDocument();
    const second = listRequests(requests)[1];
    expect(second?.get('cursor')).toBe('13');
    expect(second?.get('kind')).toBe('sms');
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
  });

  it('retries a dead delivery from the list, and the message follows it: waiting, then refused again', async () => {
    const requests = recordRequests();
    const refused = 'SMS gateway refused the message: account suspended (HTTP 403)';
    const dead = delivery({
      id: 13,
      provider: 'http',
      status: 'dead',
      attempts: 1,
      sentAt: null,
      providerId: null,
      providerStatus: null,
      lastError: refused,
    });
    let now = dead;
    server.use(
      http.get('/api/deliveries', () =>
        HttpResponse.json(deliveryList([now], { ...counts, dead: now.status === 'dead' ? 1 : 0 })),
      ),
      http.post('/api/deliveries/13/retry', () => {
        now = {
          ...dead,
          status: 'pending',
          attempts: 0,
          lastError: null,
          updatedAt: new Date().toISOString(),
        };
        return HttpResponse.json({ ...now, attemptLog: [] });
      }),
      // The dispatcher's next attempt: the gateway refuses it again.
      http.get('/api/deliveries/13', () => {
        now = { ...dead, attempts: 1, updatedAt: new Date(Date.now() + 1_000).toISOString() };
        return HttpResponse.json({ ...now, attemptLog: [] });
      }),
    );
    const { user } = renderApp('/deliveries');
    const row = (await screen.findByRole('link', { name: 'Delivery #13' })).closest('tr') as HTMLElement;
    await user.click(within(row).getByRole('button', { name: 'Retry delivery 13' }));

    expect(await within(row).findByText('Retried: waiting to be sent…')).toBeInTheDocument();
    const failed = await within(row).findByText(
      'Failed again: The SMS gateway refused it: “account suspended”.',
      {},
      { timeout: 3_000 },
    );
    expect(failed).toHaveClass('retry-result-error');
    // The row says the same: dead, and it can be retried again; no "retried" stands beside it.
    await waitFor(() => expect(within(row).getAllByRole('cell')[4]).toHaveTextContent('Dead'));
    expect(row).not.toHaveTextContent('Retried');
    expect(within(row).getByRole('button', { name: 'Retry delivery 13' })).toBeInTheDocument();
    expect(requests.filter((r) => r.method === 'POST').map((r) => new URL(r.url).pathname)).toEqual([
      '/api/deliveries/13/retry',
    ]);
  });

  it('retries every dead delivery at once, once asked how many, and the message follows the counts', async () => {
    const requests = recordRequests();
    let retriedAt = 0;
    // Before: 2 dead. Just after the retry they are pending; a moment later both are dead again.
    const countsNow = () =>
      retriedAt === 0 || Date.now() - retriedAt > 600
        ? counts
        : { ...counts, dead: 0, pending: counts.pending + 2 };
    server.use(
      http.get('/api/deliveries', () => HttpResponse.json(deliveryList([deadPush()], countsNow()))),
      http.post('/api/deliveries/retry-dead', () => {
        retriedAt = Date.now();
        return HttpResponse.json({ retried: 2 });
      }),
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              ...serviceInfo.providers.sms,
              id: 'http',
              refusing: {
                reason: 'account suspended',
                status: 403,
                since: '2026-11-20T08:10:00.000Z',
                refusals: 12,
                attempts: 12,
              },
            },
          },
        }),
      ),
    );
    const { user } = renderApp('/deliveries');
    await screen.findByRole('table');
    const before = listRequests(requests).length;
    await user.click(screen.getByRole('button', { name: 'Retry all dead' }));
    // Nothing is sent before the question is answered, and it says how many.
    expect(requests.some((r) => r.method === 'POST')).toBe(false);
    expect(
      screen.getByText(
        `Send all ${counts.dead} dead deliveries again? Each goes to its recipient as a new attempt.`,
      ),
    ).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: `Yes, send ${counts.dead} again` }));
    expect(await screen.findByText('2 retried: waiting to be sent…')).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('link', { name: 'Pending 5' })).toBeInTheDocument());

    // Once none is on its way, it says what came of them, beside a counter that says the same.
    const settled = await screen.findByText(
      '2 retried: 0 sent, 2 refused again (account suspended, HTTP 403).',
      {},
      { timeout: 3_000 },
    );
    expect(settled).toHaveClass('retry-result-error');
    await waitFor(() => expect(screen.getByRole('link', { name: 'Dead 2' })).toBeInTheDocument());
    expect(screen.queryByText(/pending again/)).not.toBeInTheDocument();
    expect(requests.filter((r) => r.method === 'POST').map((r) => new URL(r.url).pathname)).toEqual([
      '/api/deliveries/retry-dead',
    ]);
    expect(listRequests(requests).length).toBeGreaterThan(before);
  });

  it('shows why the list could not be loaded', async () => {
    server.use(
      http.get('/api/deliveries', () =>
        problemJson(
          problem(400, 'The cursor is not one this API gave out.', { errors: { cursor: 'is invalid' } }),
        ),
      ),
    );
    renderApp('/deliveries');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Could not load the deliveries: Invalid request (400)');
    expect(alert).toHaveTextContent('The cursor is not one this API gave out.');
  });
});

describe('Deliveries, live', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('shows a delivery that died after the page opened, without a reload, until Live is turned off', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const requests = recordRequests();
    let items = [delivery({ id: 12 })];
    server.use(http.get('/api/deliveries', () => HttpResponse.json(deliveryList(items, counts))));
    const { user } = renderApp('/deliveries');
    await screen.findByRole('link', { name: 'Delivery #12' });
    expect(screen.getByRole('button', { name: 'Live' })).toHaveAttribute('aria-pressed', 'true');
    expect(screen.getByText('Refreshing every 5 seconds while this page is shown.')).toBeInTheDocument();

    items = [deadPush({ id: 13 }), ...items];
    await vi.advanceTimersByTimeAsync(5_000);
    const row = (await screen.findByRole('link', { name: 'Delivery #13' })).closest('tr') as HTMLElement;
    expect(within(row).getAllByRole('cell')[4]).toHaveTextContent('Dead');

    await user.click(screen.getByRole('button', { name: 'Live' }));
    expect(screen.getByRole('button', { name: 'Live' })).toHaveAttribute('aria-pressed', 'false');
    const asked = listRequests(requests).length;
    await vi.advanceTimersByTimeAsync(12_000);
    expect(listRequests(requests)).toHaveLength(asked);
  });
});
