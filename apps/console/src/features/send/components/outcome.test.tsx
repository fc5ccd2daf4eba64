import type { Delivery } from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { delivery, deliveryList, operationResult } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { recordRequests, server } from '../../../testing/server';

const callDeliveryRequests = (requests: Request[]) =>
  requests.filter(
    (r) => new URL(r.url).pathname === '/api/deliveries' && new URL(r.url).searchParams.has('callId'),
  );

/**
 * The server for one AuthCode send (call 42) whose delivery goes through `states`, one per poll
 * (the last one stays).
 */
function sendQueuing(states: Partial<Delivery>[]) {
  let polls = 0;
  server.use(
    http.post('/api/operations/AuthCode', () =>
      HttpResponse.json(operationResult({ id: 42, message: 'SMS queued to +447911123456.', queued: 1 })),
    ),
    http.get('/api/deliveries', ({ request }) => {
      const callId = new URL(request.url).searchParams.get('callId');
      if (callId !== '42') return HttpResponse.json(deliveryList([]));
      const state = states[Math.min(polls++, states.length - 1)];
      return HttpResponse.json(deliveryList([delivery({ id: 12, callId: 42, ...state })]));
    }),
  );
}

async function send() {
  const view = renderApp('/send/AuthCode');
  await view.user.type(await screen.findByLabelText('Verification code (code)'), '4821');
  await view.user.type(screen.getByLabelText('Phone number (phone)'), '+447911123456');
  await view.user.click(screen.getByRole('button', { name: 'Send' }));
  return view;
}

const pending = {
  status: 'pending',
  attempts: 0,
  sentAt: null,
  providerId: null,
  providerStatus: null,
  unsureProvider: null,
} as const;

describe('the outcome of a send that queued a delivery', () => {
  // The polls' timers, run on demand (and with the clock, for what the test does not drive).
  beforeEach(() => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('says Queued, then follows the delivery until the log provider has logged it, and stops', async () => {
    const requests = recordRequests();
    sendQueuing([pending, { status: 'logged', provider: 'log', providerId: null, providerStatus: null }]);
    await send();

    expect(await screen.findByText(/Answered · SMS queued/)).toBeInTheDocument();
    const list = await screen.findByRole('list', { name: 'Deliveries of this send' });
    expect(within(list).getByText('Pending')).toBeInTheDocument();
    expect(list).toHaveTextContent('Waiting for its first attempt.');
    expect(screen.queryByText(/SMS sent/)).not.toBeInTheDocument();

    await vi.advanceTimersByTimeAsync(1_000);
    expect(await screen.findByText(/Answered · SMS logged, not sent/)).toBeInTheDocument();
    expect(within(list).getByText('Logged, not sent')).toHaveClass('badge-delivery-logged');
    expect(list).toHaveTextContent("Nothing was sent: the log provider wrote it to the server's log.");
    expect(within(list).getByRole('link', { name: 'Delivery #12: SMS to +447911123456' })).toHaveAttribute(
      'href',
      '/deliveries/12',
    );
    expect(screen.getByRole('link', { name: 'View call #42 in History' })).toHaveAttribute(
      'href',
      '/history/42',
    );

    // Settled: no more polling.
    const asked = callDeliveryRequests(requests).length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(callDeliveryRequests(requests)).toHaveLength(asked);
  });

  it('shows a retry with its error and next attempt, then that the delivery was given up', async () => {
    const retry = {
      ...pending,
      attempts: 1,
      lastError: 'Twilio 503: Service Unavailable',
      nextAttemptAt: new Date(Date.now()).toISOString(),
    };
    sendQueuing([
      retry,
      {
        ...retry,
        status: 'dead',
        attempts: 3,
        nextAttemptAt: null,
        lastError: 'Twilio 400: The number is unverified.',
      },
    ]);
    await send();

    const list = await screen.findByRole('list', { name: 'Deliveries of this send' });
    expect(await screen.findByText(/Answered · SMS not sent yet, retrying/)).toBeInTheDocument();
    expect(within(list).getByText('Retrying')).toBeInTheDocument();
    expect(list).toHaveTextContent('Attempt 1 failed: Twilio 503: Service Unavailable. Next attempt');
    expect(list.querySelector('time')).toHaveAttribute('datetime', retry.nextAttemptAt);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(await screen.findByText(/Answered · SMS not delivered/)).toBeInTheDocument();
    expect(within(list).getByText('Dead')).toBeInTheDocument();
    expect(list).toHaveTextContent(
      'Given up after 3 attempts: Twilio 400: The number is unverified. It can be retried from its page.',
    );
  });

  it('gives one verdict once the gateway refused the SMS: not delivered and why, never "queued" beside it', async () => {
    sendQueuing([
      pending,
      {
        ...pending,
        provider: 'http',
        status: 'dead',
        attempts: 1,
        nextAttemptAt: null,
        lastError: 'SMS gateway refused the message: account suspended (HTTP 403)',
      },
    ]);
    await send();
    const region = (await screen.findByText(/Answered · SMS queued/)).closest('.outcome') as HTMLElement;
    await vi.advanceTimersByTimeAsync(1_000);
    await waitFor(() => expect(region).toHaveTextContent('Answered · SMS not delivered'));
    expect(region).toHaveClass('outcome-error');
    expect(within(region).getByText(/SMS not delivered/)).toHaveClass('verdict-error');
    expect(region).toHaveTextContent('The SMS gateway refused it: “account suspended”.');
    expect(region).not.toHaveTextContent(/queued/i);
    expect(region).not.toHaveTextContent('Not delivered.');
    // What the console was answered stays as a detail.
    expect(region).toHaveTextContent('Wire answer: HTTP 200');
  });

  it('says Sent only once a real provider accepted it', async () => {
    sendQueuing([{ status: 'sent', provider: 'twilio', sentAt: '2026-11-20T08:15:31.000Z' }]);
    await send();
    expect(await screen.findByText(/Answered · SMS sent/)).toBeInTheDocument();
    const list = screen.getByRole('list', { name: 'Deliveries of this send' });
    expect(list).toHaveTextContent('The provider accepted it');
    expect(list.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:15:31.000Z');
  });

  it('says Answered, and follows nothing, when the operation queued nothing', async () => {
    const requests = recordRequests();
    server.use(
      http.post('/api/operations/pushNoti', () =>
        HttpResponse.json(operationResult({ id: 45, message: 'Dispatched 3 pending pushes.', queued: 0 })),
      ),
    );
    const { user } = renderApp('/send/pushNoti');
    await user.click(await screen.findByRole('button', { name: 'Send' }));
    expect(await screen.findByText(/^Answered$/)).toBeInTheDocument();
    expect(screen.getByText(/Dispatched 3 pending pushes\./)).toBeInTheDocument();
    expect(screen.queryByRole('list', { name: 'Deliveries of this send' })).not.toBeInTheDocument();
    expect(callDeliveryRequests(requests)).toHaveLength(0);
  });
});
