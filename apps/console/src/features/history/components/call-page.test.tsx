import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import {
  callDetail,
  deadPush,
  delivery,
  deliveryList,
  operationResult,
  problem,
} from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

describe('Call detail', () => {
  it('shows the request and the response side by side, XML indented', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7 }))));
    const { user } = renderApp('/history/7');
    expect(await screen.findByRole('heading', { name: 'Call #7', level: 1 })).toBeInTheDocument();
    const request = await screen.findByRole('region', { name: 'Request' });
    const response = screen.getByRole('region', { name: 'Response' });
    const message = (region: HTMLElement) => within(region).getByText(/^(POST|HTTP)/).textContent ?? '';
    const requestText = message(request);
    expect(requestText).toContain('SOAPAction: "http://tempuri.org/AuthCode"');
    expect(requestText).toContain('\n    <AuthCode xmlns="http://tempuri.org/">\n      <code>***</code>\n');
    expect(message(response)).toContain('\n    <AuthCodeResponse xmlns="http://tempuri.org/" />\n');

    await user.click(screen.getByRole('checkbox', { name: /Indent bodies/ }));
    expect(message(request)).toContain('<soap:Body><AuthCode xmlns="http://tempuri.org/">');
  });

  it('gives one verdict for a call answered 200 whose SMS the gateway refused: never OK, the wire answer as a detail', async () => {
    server.use(
      http.get('/api/calls/7', () =>
        HttpResponse.json(callDetail({ id: 7, delivery: { state: 'dead', count: 1 } })),
      ),
      http.get('/api/deliveries', () =>
        HttpResponse.json(
          deliveryList([
            delivery({
              id: 12,
              callId: 7,
              provider: 'http',
              status: 'dead',
              attempts: 1,
              sentAt: null,
              providerId: null,
              providerStatus: null,
              lastError: 'SMS gateway refused the message: account suspended (HTTP 403)',
            }),
          ]),
        ),
      ),
    );
    renderApp('/history/7');
    const result = (await screen.findByText('Result', { selector: 'dt' })).nextElementSibling as HTMLElement;
    await waitFor(() =>
      expect(result).toHaveTextContent(
        'Answered · SMS not delivered The SMS gateway refused it: “account suspended”.',
      ),
    );
    expect(within(result).getByText(/SMS not delivered/)).toHaveClass('verdict-error');
    expect(screen.queryByText('Outcome', { selector: 'dt' })).not.toBeInTheDocument();
    expect(screen.queryByText('OK')).not.toBeInTheDocument();
    expect(screen.getByText('Wire answer', { selector: 'dt' }).nextElementSibling).toHaveTextContent(
      'HTTP 200',
    );
  });

  it('follows the SMS while it is on its way: the verdict changes without a reload', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      let polls = 0;
      const waiting = delivery({ id: 12, callId: 7, status: 'pending', attempts: 0, sentAt: null });
      server.use(
        // The call was read once, while its SMS waited.
        http.get('/api/calls/7', () =>
          HttpResponse.json(callDetail({ id: 7, delivery: { state: 'waiting', count: 1 } })),
        ),
        http.get('/api/deliveries', () =>
          HttpResponse.json(deliveryList([polls++ === 0 ? waiting : delivery({ id: 12, callId: 7 })])),
        ),
      );
      renderApp('/history/7');
      const result = (await screen.findByText('Result', { selector: 'dt' }))
        .nextElementSibling as HTMLElement;
      await waitFor(() => expect(result).toHaveTextContent('Answered · SMS queued'));
      await vi.advanceTimersByTimeAsync(5_000);
      await waitFor(() => expect(result).toHaveTextContent('Answered · SMS sent'));
      expect(within(result).getByText(/SMS sent/)).toHaveClass('verdict-ok');
    } finally {
      vi.useRealTimers();
    }
  });

  it('shows the request id the server logged the call under, to copy', async () => {
    server.use(
      http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, requestId: 'nginx-4f1c2a9b' }))),
    );
    const { user } = renderApp('/history/7');
    const id = await screen.findByText('nginx-4f1c2a9b');
    expect(id.tagName).toBe('CODE');
    const term = screen.getByText('Request ID', { selector: 'dt' });
    expect(term.nextElementSibling).toContainElement(id);
    await user.click(screen.getByRole('button', { name: 'Copy request ID' }));
    expect(await navigator.clipboard.readText()).toBe('nginx-4f1c2a9b');
  });

  it('says whose call it is: its school, one deleted since by its id, or none', async () => {
    server.use(
      http.get('/api/calls/7', () =>
        HttpResponse.json(callDetail({ id: 7, school: { id: 3, name: 'Northfield Primary' } })),
      ),
      http.get('/api/calls/8', () => HttpResponse.json(callDetail({ id: 8, school: { id: 9, name: null } }))),
      http.get('/api/calls/9', () => HttpResponse.json(callDetail({ id: 9, school: null }))),
    );
    const school = async () =>
      (await screen.findByText('School', { selector: 'dt' })).nextElementSibling as HTMLElement;
    const first = renderApp('/history/7');
    expect(await school()).toHaveTextContent(/^Northfield Primary$/);
    first.unmount();
    const second = renderApp('/history/8');
    expect(await school()).toHaveTextContent(/^school 9 \(deleted\)$/);
    second.unmount();
    renderApp('/history/9');
    expect(await school()).toHaveTextContent(/^None \(seen by staff of all schools only\)$/);
  });

  it('says when a call was recorded before request ids were kept', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, requestId: null }))));
    renderApp('/history/7');
    const term = await screen.findByText('Request ID', { selector: 'dt' });
    expect(term.nextElementSibling).toHaveTextContent('not recorded');
    expect(screen.queryByRole('button', { name: 'Copy request ID' })).not.toBeInTheDocument();
  });

  it('renders recorded bodies as text, never as HTML', async () => {
    const hostile =
      'HTTP/1.1 400\r\nContent-Type: text/html\r\n\r\n<img src=x onerror="alert(1)"><script>alert(2)</script>';
    server.use(http.get('/api/calls/8', () => HttpResponse.json(callDetail({ id: 8, response: hostile }))));
    const { container } = renderApp('/history/8');
    const response = await screen.findByRole('region', { name: 'Response' });
    expect(within(response).getByText(/^HTTP\/1\.1 400/).textContent).toContain('<script>alert(2)</script>');
    expect(container.querySelector('img, script')).toBeNull();
  });

  it('says when there is no such call', async () => {
    server.use(http.get('/api/calls/99', () => problemJson(problem(404, 'No call 99.'))));
    renderApp('/history/99');
    expect(await screen.findByRole('alert')).toHaveTextContent('No call #99: Not found (404)');
    expect(screen.getByRole('link', { name: '← Back to History' })).toHaveAttribute('href', '/history');
  });

  it('shows what the call did and the deliveries it queued, each linking to its attempts', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls/9', () =>
        HttpResponse.json(
          callDetail({
            id: 9,
            operation: 'SendNotificationType',
            note: "Push queued to school-northfield for type 'homework'.",
          }),
        ),
      ),
      http.get('/api/deliveries', ({ request }) => {
        const callId = new URL(request.url).searchParams.get('callId');
        return HttpResponse.json(
          callId === '9'
            ? deliveryList([deadPush({ id: 13, callId: 9 }), delivery({ id: 12, callId: 9, status: 'sent' })])
            : deliveryList([]),
        );
      }),
    );
    renderApp('/history/9');
    expect(
      await screen.findByText("Push queued to school-northfield for type 'homework'."),
    ).toBeInTheDocument();

    const section = await screen.findByRole('region', { name: 'Deliveries' });
    const items = await within(section).findAllByRole('listitem');
    // Oldest first, as a timeline.
    expect(items.map((li) => within(li).getByRole('link').textContent)).toEqual([
      'Delivery #12: SMS to +447911123456',
      'Delivery #13: Push to school-northfield',
    ]);
    expect(items[0]).toHaveTextContent('Sent');
    expect(items[1]).toHaveTextContent('Dead');
    expect(items[1]).toHaveTextContent('FCM 503: The service is currently unavailable.');
    expect(within(section).getByRole('link', { name: /Delivery #13/ })).toHaveAttribute(
      'href',
      '/deliveries/13',
    );

    const asked = requests.filter((r) => new URL(r.url).pathname === '/api/deliveries');
    expect(new URL(asked[0]?.url ?? '').searchParams.get('callId')).toBe('9');
  });

  it('says when a call queued nothing', async () => {
    server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7, note: null }))));
    renderApp('/history/7');
    const section = await screen.findByRole('region', { name: 'Deliveries' });
    expect(await within(section).findByText('This call queued no SMS or push.')).toBeInTheDocument();
  });

  describe('Replay', () => {
    const markNotes = callDetail({
      id: 9,
      group: 'NotificationNotes',
      operation: 'SendMarkNotes',
      binding: 'http-get',
      params: { id: '88', id_class: '7B', baseUrlSchool: 'https://school.example.org/' },
    });

    it('sends the parameters again as a new console call, after a confirmation, and opens it', async () => {
      const requests = recordRequests();
      server.use(
        http.get('/api/calls/9', () => HttpResponse.json(markNotes)),
        http.post('/api/operations/SendMarkNotes', () =>
          HttpResponse.json(operationResult({ id: 10, message: 'Push queued.', queued: 1 })),
        ),
        http.get('/api/calls/10', () =>
          HttpResponse.json({ ...markNotes, id: 10, binding: 'console', note: 'Push queued.' }),
        ),
      );
      const { user, location } = renderApp('/history/9');
      await user.click(await screen.findByRole('button', { name: 'Replay' }));
      const question = screen.getByRole('group', {
        name: 'Send SendMarkNotes again with the recorded id, id_class, baseUrlSchool? This makes a new call from the console: anything it sends goes out again.',
      });
      // Nothing is sent until it is confirmed.
      expect(requests.filter((r) => r.method === 'POST')).toEqual([]);
      await user.click(within(question).getByRole('button', { name: 'Yes, send again' }));

      await waitFor(() => expect(location().pathname).toBe('/history/10'));
      expect(await screen.findByRole('heading', { name: 'Call #10', level: 1 })).toBeInTheDocument();
      const [sent] = requests.filter((r) => r.method === 'POST');
      expect(new URL(sent?.url ?? '').pathname).toBe('/api/operations/SendMarkNotes');
      expect(await sent?.json()).toEqual({
        id: '88',
        id_class: '7B',
        baseUrlSchool: 'https://school.example.org/',
      });
    });

    it('opens the new call when the replay is refused: it is recorded all the same', async () => {
      server.use(
        http.get('/api/calls/9', () => HttpResponse.json(markNotes)),
        http.post('/api/operations/SendMarkNotes', () =>
          problemJson(problem(400, "Unknown school 'https://school.example.org/'.", { callId: 11 })),
        ),
        http.get('/api/calls/11', () =>
          HttpResponse.json({ ...markNotes, id: 11, outcome: 'client-error', status: 400 }),
        ),
      );
      const { user, location } = renderApp('/history/9');
      await user.click(await screen.findByRole('button', { name: 'Replay' }));
      await user.click(screen.getByRole('button', { name: 'Yes, send again' }));
      await waitFor(() => expect(location().pathname).toBe('/history/11'));
    });

    it('says why when the replay could not even be recorded, and can be cancelled', async () => {
      server.use(
        http.get('/api/calls/9', () => HttpResponse.json(markNotes)),
        http.post('/api/operations/SendMarkNotes', () =>
          problemJson(problem(403, 'Your role does not allow this. Ask an admin.')),
        ),
      );
      const { user, location } = renderApp('/history/9');
      const replay = await screen.findByRole('button', { name: 'Replay' });
      await user.click(replay);
      await user.click(screen.getByRole('button', { name: 'Cancel' }));
      expect(screen.getByRole('button', { name: 'Replay' })).toHaveFocus();
      await user.click(screen.getByRole('button', { name: 'Replay' }));
      await user.click(screen.getByRole('button', { name: 'Yes, send again' }));
      expect(await screen.findByRole('alert')).toHaveTextContent(
        'Not replayed: Your role does not allow this. Ask an admin. (HTTP 403)',
      );
      expect(location().pathname).toBe('/history/9');
    });

    it('cannot replay a call whose auth code the record masks, and points to Send', async () => {
      server.use(http.get('/api/calls/7', () => HttpResponse.json(callDetail({ id: 7 }))));
      renderApp('/history/7');
      const replay = await screen.findByRole('button', { name: 'Replay' });
      expect(replay).toBeDisabled();
      expect(replay).toHaveAccessibleDescription(
        'Cannot be replayed: the code it sent is not kept (the record masks it), so it cannot be sent again as it was. Send a new AuthCode instead.',
      );
      expect(screen.getByRole('link', { name: 'Send a new AuthCode' })).toHaveAttribute(
        'href',
        '/send/AuthCode',
      );
    });

    it('cannot replay a call of no recognised operation, nor one whose parameters could not be read', async () => {
      server.use(
        http.get('/api/calls/5', () => HttpResponse.json(callDetail({ id: 5, operation: null, params: {} }))),
        http.get('/api/calls/6', () =>
          HttpResponse.json(
            callDetail({ id: 6, operation: 'pushNoti', group: 'PushNotificationMobile', params: null }),
          ),
        ),
      );
      const first = renderApp('/history/5');
      expect(await screen.findByRole('button', { name: 'Replay' })).toHaveAccessibleDescription(
        'Cannot be replayed: it named no operation this service has, so there is nothing to send again.',
      );
      first.unmount();
      renderApp('/history/6');
      const replay = await screen.findByRole('button', { name: 'Replay' });
      expect(replay).toBeDisabled();
      expect(replay).toHaveAccessibleDescription(
        'Cannot be replayed: its parameters could not be read, so they cannot be sent again.',
      );
    });
  });
});
