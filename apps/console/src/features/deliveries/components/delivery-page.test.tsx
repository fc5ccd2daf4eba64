import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { attempt, deadPush, delivery, deliveryDetail, problem, serviceInfo } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const dead = deliveryDetail(deadPush({ id: 13, callId: 9, attempts: 2 }), [
  attempt({
    id: 201,
    startedAt: '2026-11-20T08:15:31.000Z',
    finishedAt: '2026-11-20T08:15:31.250Z',
    outcome: 'transient',
    status: 503,
    error: 'FCM 503: The service is currently unavailable.',
    response: '{"error":{"code":503,"status":"UNAVAILABLE"}}',
    retryAfterMs: 30_000,
  }),
  attempt({
    id: 202,
    startedAt: '2026-11-20T08:16:01.000Z',
    finishedAt: '2026-11-20T08:16:01.100Z',
    outcome: 'permanent',
    status: 404,
    error: 'FCM 404: Requested entity was not found.',
    response: '{"error":{"code":404,"status":"NOT_FOUND"}}',
  }),
]);

describe('Delivery detail', () => {
  it("leads with what happened in plain words: the gateway's own reason, and that it is not retried", async () => {
    const suspended = deliveryDetail(
      delivery({
        id: 15,
        provider: 'http',
        status: 'dead',
        providerStatus: null,
        sentAt: null,
        lastError: 'SMS gateway refused the message: Account suspended (HTTP 403)',
      }),
      [attempt({ id: 401, provider: 'http', outcome: 'permanent', status: 403 })],
    );
    server.use(http.get('/api/deliveries/15', () => HttpResponse.json(suspended)));
    renderApp('/deliveries/15');
    // The first test loads the page's code (lazily): it may take a while on a busy machine.
    const verdict = await screen.findByText('This SMS was not sent', {}, { timeout: 5000 });
    const box = verdict.closest('.status') as HTMLElement;
    expect(box).toHaveTextContent(
      'The SMS gateway refused it: “Account suspended”. It is not tried again by itself',
    );
    // It comes before the details.
    expect(
      box.compareDocumentPosition(screen.getByText('Last error')) & Node.DOCUMENT_POSITION_FOLLOWING,
    ).toBeTruthy();
  });

  it('says sending is paused and until when, for a delivery waiting on a provider that keeps failing', async () => {
    const waiting = deliveryDetail(
      delivery({
        id: 16,
        provider: 'http',
        status: 'pending',
        attempts: 3,
        nextAttemptAt: '2026-11-20T08:16:00.000Z',
        providerId: null,
        providerStatus: null,
        sentAt: null,
        lastError: 'SMS gateway temporarily unavailable (HTTP 503)',
      }),
      [],
    );
    server.use(
      http.get('/api/deliveries/16', () => HttpResponse.json(waiting)),
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: {
            ...serviceInfo.providers,
            sms: {
              ...serviceInfo.providers.sms,
              name: 'http',
              id: 'http',
              circuit: {
                state: 'open',
                since: '2026-11-20T08:15:40.000Z',
                until: '2026-11-20T08:17:40.000Z',
              },
            },
          },
        }),
      ),
    );
    renderApp('/deliveries/16');
    const box = (await screen.findByText('Not sent yet')).closest('.status') as HTMLElement;
    expect(box).toHaveTextContent(
      'The last try failed: The SMS gateway was unavailable and gave no reason (HTTP 503).',
    );
    await waitFor(() =>
      expect(box).toHaveTextContent('Sending through http is paused after repeated failures until'),
    );
    expect(box.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:17:40.000Z');
    // Not "Next try 1 min ago" while paused: the pause says when.
    expect(box).not.toHaveTextContent('Next try');
  });

  it('says an attempt of the log provider was logged, and shows no expiry once a delivery is finished', async () => {
    const logged = deliveryDetail(
      delivery({ id: 14, provider: 'log', status: 'logged', providerId: null, providerStatus: null }),
      [attempt({ id: 301, outcome: 'sent' })],
    );
    server.use(http.get('/api/deliveries/14', () => HttpResponse.json(logged)));
    renderApp('/deliveries/14');
    const attempts = await screen.findByRole('region', { name: 'Attempts' });
    expect(within(attempts).getByRole('heading', { level: 3 })).toHaveTextContent('Attempt 1: Logged');
    expect(within(attempts).queryByText('Sent')).not.toBeInTheDocument();
    // Finished: when it would have expired, or be tried next, no longer matters.
    expect(screen.queryByText('Expires')).not.toBeInTheDocument();
    expect(screen.queryByText('Next attempt')).not.toBeInTheDocument();
  });

  it('says a code sent by the fallback after the primary timed out may have arrived twice', async () => {
    const twice = deliveryDetail(
      delivery({ id: 16, provider: 'twilio-fallback', status: 'sent', unsureProvider: 'http' }),
      [
        attempt({ id: 401, provider: 'http', outcome: 'transient', error: 'No answer within 10 s' }),
        attempt({ id: 402, provider: 'twilio-fallback', outcome: 'sent' }),
      ],
    );
    server.use(http.get('/api/deliveries/16', () => HttpResponse.json(twice)));
    renderApp('/deliveries/16');
    expect(await screen.findByText('May have arrived twice')).toBeInTheDocument();
    expect(
      screen.getByText(/http did not answer whether it took the message before twilio-fallback sent it/),
    ).toBeInTheDocument();
  });

  it('says nothing of duplicates when the provider that was unsure sent it itself (same key)', async () => {
    const same = deliveryDetail(
      delivery({ id: 17, provider: 'http', status: 'sent', unsureProvider: 'http' }),
      [],
    );
    server.use(http.get('/api/deliveries/17', () => HttpResponse.json(same)));
    renderApp('/deliveries/17');
    expect(await screen.findByRole('heading', { name: 'Delivery #17', level: 1 })).toBeInTheDocument();
    expect(screen.queryByText('May have arrived twice')).not.toBeInTheDocument();
  });

  it('shows the expiry of a delivery that can still be sent', async () => {
    const pending = deliveryDetail(
      delivery({ id: 15, status: 'pending', sentAt: null, nextAttemptAt: '2026-11-20T08:16:30.000Z' }),
      [],
    );
    server.use(http.get('/api/deliveries/15', () => HttpResponse.json(pending)));
    renderApp('/deliveries/15');
    expect(await screen.findByText('Expires')).toBeInTheDocument();
    expect(screen.getByText('Next attempt')).toBeInTheDocument();
  });

  it('shows the delivery and its attempts as a timeline, oldest first', async () => {
    server.use(http.get('/api/deliveries/13', () => HttpResponse.json(dead)));
    renderApp('/deliveries/13');
    expect(await screen.findByRole('heading', { name: 'Delivery #13', level: 1 })).toBeInTheDocument();
    expect(await screen.findByText('school-northfield')).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Call #9 in History' })).toHaveAttribute('href', '/history/9');

    const attempts = screen.getByRole('region', { name: 'Attempts' });
    const [first, second] = within(attempts).getAllByRole('listitem');
    if (!first || !second) throw new Error('missing attempts');
    expect(within(first).getByRole('heading')).toHaveTextContent('Attempt 1: Transient error');
    expect(first).toHaveTextContent('HTTP status503');
    expect(first).toHaveTextContent('FCM 503: The service is currently unavailable.');
    expect(first).toHaveTextContent('Retry after30.0 s');
    expect(first).toHaveTextContent('{"error":{"code":503,"status":"UNAVAILABLE"}}');
    expect(first.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:15:31.000Z');
    expect(first).toHaveTextContent('(250 ms)');
    expect(within(second).getByRole('heading')).toHaveTextContent('Attempt 2: Permanent error');
    expect(second).toHaveTextContent('HTTP status404');
    // Which provider made each attempt (a fallback's id ends in -fallback).
    expect(first).toHaveTextContent('Providerfcm');
  });

  it('shows no empty HTTP status above a provider response that has one', async () => {
    const sent = deliveryDetail(delivery({ id: 17, provider: 'http', status: 'sent' }), [
      attempt({ id: 501, provider: 'http', status: null, response: 'HTTP 200 {"accepted":true}' }),
    ]);
    server.use(http.get('/api/deliveries/17', () => HttpResponse.json(sent)));
    renderApp('/deliveries/17');
    const attempts = await screen.findByRole('region', { name: 'Attempts' }, { timeout: 5000 });
    const [only] = within(attempts).getAllByRole('listitem');
    expect(only).toHaveTextContent('HTTP 200 {"accepted":true}');
    expect(only).not.toHaveTextContent('HTTP status');
  });

  it('says which provider made each attempt when a fallback took over', async () => {
    server.use(
      http.get('/api/deliveries/13', () =>
        HttpResponse.json({
          ...dead,
          attemptLog: [
            attempt({
              id: 1,
              provider: 'http',
              outcome: 'transient',
              status: 503,
              error: 'SMS gateway temporarily unavailable (HTTP 503)',
            }),
            attempt({ id: 2, provider: 'twilio-fallback', outcome: 'sent', status: null }),
          ],
        }),
      ),
    );
    renderApp('/deliveries/13');
    const attempts = await screen.findByRole('region', { name: 'Attempts' });
    const [first, second] = within(attempts).getAllByRole('listitem');
    expect(first).toHaveTextContent('Providerhttp');
    expect(second).toHaveTextContent('Providertwilio-fallback');
  });

  it('retries a dead delivery and shows its new status', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/deliveries/13', () => HttpResponse.json(dead)),
      http.post('/api/deliveries/13/retry', () =>
        HttpResponse.json({
          ...dead,
          status: 'pending',
          attempts: 0,
          lastError: null,
          nextAttemptAt: '2026-11-20T09:00:00.000Z',
        }),
      ),
    );
    const { user } = renderApp('/deliveries/13');
    await user.click(await screen.findByRole('button', { name: 'Retry delivery 13' }));

    expect(await screen.findByText('Retried: waiting to be sent…')).toBeInTheDocument();
    const status = screen.getByText('Status').nextElementSibling as HTMLElement;
    expect(status).toHaveTextContent(/^Pending/);
    expect(screen.queryByRole('button', { name: /Retry/ })).not.toBeInTheDocument();
    const posts = requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => new URL(r.url).pathname)).toEqual(['/api/deliveries/13/retry']);
  });

  it('follows a retried delivery closely: Sent shows within a second of the dispatcher sending it', async () => {
    let sent = false;
    server.use(
      http.get('/api/deliveries/13', () =>
        HttpResponse.json(
          sent
            ? {
                ...dead,
                status: 'sent',
                sentAt: new Date().toISOString(),
                updatedAt: new Date().toISOString(),
              }
            : dead,
        ),
      ),
      http.post('/api/deliveries/13/retry', () => {
        // Sent a moment after the retry, as the dispatcher does.
        setTimeout(() => {
          sent = true;
        }, 100);
        return HttpResponse.json({
          ...dead,
          status: 'pending',
          attempts: 0,
          lastError: null,
          updatedAt: new Date().toISOString(),
          nextAttemptAt: new Date().toISOString(),
        });
      }),
    );
    const { user } = renderApp('/deliveries/13');
    await user.click(await screen.findByRole('button', { name: 'Retry delivery 13' }));
    const status = () => screen.getByText('Status').nextElementSibling as HTMLElement;
    await waitFor(() => expect(status()).toHaveTextContent(/^Sent/), { timeout: 1500 });
    // The retry's message follows: it says sent, beside Sent.
    expect(screen.getByText('Retried and sent.')).toHaveClass('retry-result-ok');
    expect(screen.queryByText(/waiting to be sent/)).not.toBeInTheDocument();
  });

  it("shows the server's 409 plainly when the delivery is no longer dead", async () => {
    const detail = 'Delivery 13 is pending; only dead deliveries can be retried.';
    server.use(
      http.get('/api/deliveries/13', () => HttpResponse.json(dead)),
      http.post('/api/deliveries/13/retry', () => problemJson(problem(409, detail))),
    );
    const { user } = renderApp('/deliveries/13');
    await user.click(await screen.findByRole('button', { name: 'Retry delivery 13' }));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent(`Not retried: ${detail} (HTTP 409)`);
    await waitFor(() => expect(screen.getByRole('button', { name: 'Retry delivery 13' })).toBeEnabled());
  });

  it('says when there is no such delivery', async () => {
    server.use(http.get('/api/deliveries/99', () => problemJson(problem(404, 'There is no delivery 99.'))));
    renderApp('/deliveries/99');
    expect(await screen.findByRole('alert')).toHaveTextContent('No delivery #99: Not found (404)');
    expect(screen.getByRole('link', { name: '← Back to Deliveries' })).toHaveAttribute('href', '/deliveries');
  });
});
