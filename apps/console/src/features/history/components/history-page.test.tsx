import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { formatDateTime } from '../../../lib/format';
import { callDetail, callList, callSummary, problem } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';
import { DELIVERY_REFRESH_MS } from '../api/get-calls';

const listRequests = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/calls').map((r) => new URL(r.url).searchParams);

describe('History', () => {
  it('lets a keyboard skip past the filters to the results', async () => {
    renderApp('/history');
    await screen.findByRole('heading', { name: 'History', level: 1 });
    const skip = screen.getByRole('link', { name: 'Skip to results' });
    expect(skip).toHaveAttribute('href', '#history-results');
    expect(document.getElementById('history-results')).toHaveAttribute('tabindex', '-1');
  });

  it('shows a call as a row: time, operation, binding, caller, key parameters, result, duration', async () => {
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.json(
          callList([
            callSummary({
              id: 7,
              operation: 'AuthCode',
              binding: 'soap12',
              callerIp: '203.0.113.9',
              params: { code: '***', phone: '+447911123456' },
              outcome: 'client-error',
              status: 500,
              error: 'Too many codes for this phone; try again in 15 minutes (at most 5 per 15 minutes).',
              durationMs: 12.4,
            }),
          ]),
        ),
      ),
    );
    renderApp('/history');
    // The first test loads the page's code (lazily): it may take a while on a busy machine.
    const table = await screen.findByRole('table', { name: 'Calls, newest first' }, { timeout: 5000 });
    const headers = within(table)
      .getAllByRole('columnheader')
      .map((th) => th.textContent);
    expect(headers).toEqual([
      'Time',
      'Operation',
      'Protocol',
      'Caller',
      'Key parameters',
      'Result',
      'Duration',
    ]);
    const [, row] = within(table).getAllByRole('row');
    if (!row) throw new Error('no row');
    const cells = within(row).getAllByRole('cell');
    expect(cells[1]).toHaveTextContent('AuthCode');
    expect(cells[2]).toHaveTextContent('SOAP 1.2');
    expect(cells[3]).toHaveTextContent('203.0.113.9');
    expect(cells[4]).toHaveTextContent('code=***');
    expect(cells[4]).toHaveTextContent('phone=+447911123456');
    expect(cells[5]).toHaveTextContent('Refused: too many codes (500)');
    // The error whole, however long: staff read it without opening the call.
    expect(cells[5]).toHaveTextContent(
      'Too many codes for this phone; try again in 15 minutes (at most 5 per 15 minutes).',
    );
    expect(cells[6]).toHaveTextContent('12 ms');
    expect(within(row).getByRole('link', { name: /Call 7/ })).toHaveAttribute('href', '/history/7');
    expect(screen.getByText('This is the only call.')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
  });

  it('gives each call one verdict: an SMS that went dead is never beside a green OK, and finds the calls whose delivery failed', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls', ({ request }) => {
        const failed = new URL(request.url).searchParams.get('delivery') === 'failed';
        const dead = callSummary({ id: 9, delivery: { state: 'dead', count: 1 } });
        return HttpResponse.json(
          callList(
            failed
              ? [dead]
              : [
                  dead,
                  callSummary({ id: 8, delivery: { state: 'logged', count: 1 } }),
                  callSummary({ id: 6, operation: 'SendMarkNotes', delivery: { state: 'sent', count: 3 } }),
                  callSummary({ id: 5, operation: 'GetBookPdfByTerm', delivery: null }),
                ],
          ),
        );
      }),
    );
    const { user, location } = renderApp('/history');
    const table = await screen.findByRole('table', { name: 'Calls, newest first' }, { timeout: 5000 });
    const resultOf = (id: number) => {
      const row = within(table)
        .getByRole('link', { name: new RegExp(`Call ${id},`) })
        .closest('tr');
      return within(row as HTMLElement).getAllByRole('cell')[5] as HTMLElement;
    };
    // The call was answered 200; its SMS went dead: one red verdict, the wire's answer a detail.
    expect(resultOf(9)).toHaveTextContent('Answered · SMS not delivered');
    expect(within(resultOf(9)).getByText(/SMS not delivered/)).toHaveClass('verdict-error');
    expect(resultOf(9)).toHaveTextContent('Wire answer: HTTP 200');
    expect(resultOf(9).closest('tr')).not.toHaveTextContent('OK');
    expect(resultOf(9).closest('tr')?.querySelector('.badge-ok, .verdict-ok')).toBeNull();
    expect(resultOf(8)).toHaveTextContent('Answered · SMS logged, not sent');
    expect(within(resultOf(8)).getByText(/logged/)).toHaveClass('verdict-warn');
    expect(resultOf(6)).toHaveTextContent('Answered · 3 pushes sent');
    expect(within(resultOf(6)).getByText(/sent/)).toHaveClass('verdict-ok');
    expect(resultOf(5)).toHaveTextContent(/^✓ Answered\s*Wire answer: HTTP 200$/);

    await user.selectOptions(screen.getByLabelText('Delivery'), 'failed');
    await waitFor(() => expect(location().search).toBe('?delivery=failed'));
    await waitFor(() => expect(listRequests(requests).at(-1)?.get('delivery')).toBe('failed'));
    await waitFor(() =>
      expect(
        within(screen.getByRole('table', { name: 'Calls, newest first' })).getAllByRole('row'),
      ).toHaveLength(2),
    );
    expect(screen.getByRole('link', { name: 'Export CSV' })).toHaveAttribute(
      'href',
      '/api/calls/export?format=csv&delivery=failed',
    );
  });

  it('reads the list again while a new call’s SMS is on its way, until it is sent', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      let reads = 0;
      server.use(
        http.get('/api/calls', () => {
          reads++;
          const delivery =
            reads < 3 ? { state: 'waiting' as const, count: 1 } : { state: 'sent' as const, count: 1 };
          return HttpResponse.json(callList([callSummary({ delivery })]));
        }),
      );
      renderApp('/history');
      const table = await screen.findByRole('table', { name: 'Calls, newest first' }, { timeout: 5000 });
      expect(table).toHaveTextContent('Answered · SMS queued');
      await vi.advanceTimersByTimeAsync(DELIVERY_REFRESH_MS);
      await vi.advanceTimersByTimeAsync(DELIVERY_REFRESH_MS);
      await waitFor(() => expect(table).toHaveTextContent('Answered · SMS sent'));
      const settled = reads;
      // Once sent, nothing on the page is on its way: no more reads.
      await vi.advanceTimersByTimeAsync(3 * DELIVERY_REFRESH_MS);
      expect(reads).toBe(settled);
    } finally {
      vi.useRealTimers();
    }
  });

  it('says so when there are no calls, and when no call matches the filters', async () => {
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([]))));
    const first = renderApp('/history');
    expect(await screen.findByText('No calls recorded yet.')).toBeInTheDocument();
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
    first.unmount();

    renderApp('/history?outcome=server-error');
    expect(await screen.findByText('No calls match these filters.')).toBeInTheDocument();
  });

  it('goes through a list with the arrow keys asking once, for the choice it stops on', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([callSummary()]))));
    const { location } = renderApp('/history');
    await screen.findByRole('table');
    const list = screen.getByLabelText('Operation');
    // What Chromium does for each arrow key on a closed list: a change event.
    for (const value of ['AuthCode', 'GetBookPdfByTerm', 'SendNotificationType']) {
      fireEvent.change(list, { target: { value } });
    }
    await waitFor(() => expect(location().search).toBe('?operation=SendNotificationType'));
    await new Promise((r) => setTimeout(r, 500));
    expect(listRequests(requests).map((q) => q.get('operation'))).toEqual([null, 'SendNotificationType']);

    // Leaving the list applies a choice at once, without the pause.
    fireEvent.change(screen.getByLabelText('Outcome'), { target: { value: 'server-error' } });
    fireEvent.focusOut(screen.getByLabelText('Outcome'));
    await waitFor(
      () => expect(location().search).toBe('?operation=SendNotificationType&outcome=server-error'),
      {
        timeout: 200,
      },
    );
  });

  it('folds the filters behind one button saying how many are on (phones)', async () => {
    const { user } = renderApp('/history?operation=AuthCode&outcome=ok');
    const toggle = await screen.findByRole('button', { name: 'Filters · 2 on' });
    expect(toggle).toHaveAttribute('aria-expanded', 'false');
    expect(document.getElementById(toggle.getAttribute('aria-controls') ?? '')).toHaveRole('search');
    await user.click(toggle);
    expect(toggle).toHaveAttribute('aria-expanded', 'true');
  });

  it('puts the filters in the URL and in the query string of the request', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([callSummary()]))));
    const { user, location } = renderApp('/history');
    await screen.findByRole('table');
    expect(listRequests(requests)[0]?.toString()).toBe('limit=50');

    // A choice in a list applies by itself (after a short pause).
    await user.selectOptions(screen.getByLabelText('Operation'), 'AuthCode');
    await waitFor(() => expect(location().search).toBe('?operation=AuthCode'));
    await waitFor(() => expect(listRequests(requests).at(-1)?.get('operation')).toBe('AuthCode'));

    // Typed filters apply with Enter.
    await user.type(screen.getByLabelText('Caller IP'), '203.0.113.9');
    await user.type(screen.getByLabelText('Phone'), ' 07911 123456 ');
    await user.type(screen.getByLabelText('Text'), '+4479{Enter}');
    await waitFor(() =>
      expect(location().search).toBe('?operation=AuthCode&ip=203.0.113.9&phone=07911+123456&q=%2B4479'),
    );
    // Applying keeps the keyboard where it was.
    expect(screen.getByLabelText('Text')).toHaveFocus();
    await waitFor(() => {
      const last = listRequests(requests).at(-1);
      expect(last?.get('operation')).toBe('AuthCode');
      expect(last?.get('ip')).toBe('203.0.113.9');
      expect(last?.get('phone')).toBe('07911 123456');
      expect(last?.get('q')).toBe('+4479');
      expect(last?.get('limit')).toBe('50');
    });

    // The exports download what is filtered.
    expect(screen.getByRole('link', { name: 'Export CSV' })).toHaveAttribute(
      'href',
      '/api/calls/export?format=csv&operation=AuthCode&ip=203.0.113.9&phone=07911+123456&q=%2B4479',
    );
    expect(screen.getByRole('link', { name: 'Export JSON' })).toHaveAttribute(
      'href',
      '/api/calls/export?format=json&operation=AuthCode&ip=203.0.113.9&phone=07911+123456&q=%2B4479',
    );

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(location().search).toBe(''));
    expect(screen.getByLabelText('Operation')).toHaveValue('');
    expect(screen.getByLabelText('Text')).toHaveValue('');
  });

  it('reads the filters back from a shared link, time range included', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([callSummary()]))));
    renderApp('/history?binding=http-get&from=2026-11-20T08%3A00%3A00.000Z&q=7B&binding_typo=x');
    await screen.findByRole('table');
    expect(screen.getByLabelText('Protocol')).toHaveValue('http-get');
    expect(screen.getByLabelText('Text')).toHaveValue('7B');
    expect(screen.getByLabelText('From')).not.toHaveValue('');
    const sent = listRequests(requests)[0];
    expect(sent?.get('binding')).toBe('http-get');
    expect(sent?.get('from')).toBe('2026-11-20T08:00:00.000Z');
    expect(sent?.get('q')).toBe('7B');
    expect(sent?.has('binding_typo')).toBe(false);
  });

  it('refuses a time range that ends before it starts, without a request', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([callSummary()]))));
    const { user, location } = renderApp('/history');
    await screen.findByRole('table');
    await user.type(screen.getByLabelText('From'), '2026-11-20T10:00');
    await user.type(screen.getByLabelText('To'), '2026-11-20T09:00');
    await user.click(screen.getByRole('button', { name: 'Apply filters' }));
    expect(await screen.findByText('“To” must be after “From”.')).toBeInTheDocument();
    expect(screen.getByLabelText('To')).toHaveAttribute('aria-invalid', 'true');
    expect(location().search).toBe('');
    expect(listRequests(requests)).toHaveLength(1);
  });

  it('loads older calls with the cursor of the previous page', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls', ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        return HttpResponse.json(
          cursor === 'MTc2MzYyNjUzMDAwMC43'
            ? callList([callSummary({ id: 6, operation: 'SendMarkNotes', group: 'NotificationNotes' })])
            : callList([callSummary({ id: 7 })], 'MTc2MzYyNjUzMDAwMC43'),
        );
      }),
    );
    const { user } = renderApp('/history?operation=AuthCode');
    await screen.findByRole('link', { name: /Call 7/ });
    await user.click(screen.getByRole('button', { name: 'Load more' }));

    expect(await screen.findByRole('link', { name: /Call 6/ })).toBeInTheDocument();
    expect(screen.getByRole('link', { name: /Call 7/ })).toBeInTheDocument();
    const second = listRequests(requests)[1];
    expect(second?.get('cursor')).toBe('MTc2MzYyNjUzMDAwMC43');
    expect(second?.get('operation')).toBe('AuthCode');
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
    expect(screen.getByText('All 2 calls are shown.')).toBeInTheDocument();
  });

  it('says when a free-text search stopped before filling the page, and load more keeps searching', async () => {
    const requests = recordRequests();
    const scannedBack = '2026-11-12T14:02:00.000Z';
    server.use(
      http.get('/api/calls', ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        return HttpResponse.json(
          cursor === 'c29tZXdoZXJl'
            ? {
                ...callList([callSummary({ id: 3 })]),
                search: { complete: true, scanned: 800, scannedBack: '2026-11-01T00:00:00.000Z' },
              }
            : {
                ...callList([callSummary({ id: 7 })], 'c29tZXdoZXJl'),
                search: { complete: false, scanned: 31_000, scannedBack },
              },
        );
      }),
    );
    const { user } = renderApp('/history?q=needle');
    await screen.findByRole('link', { name: /Call 7/ });
    const note = screen.getByRole('note');
    expect(note).toHaveTextContent(
      `Searched back to calls from ${formatDateTime(scannedBack)} without filling the page. Narrow the search by time, operation or binding, or load more to keep searching.`,
    );

    await user.click(screen.getByRole('button', { name: 'Load more' }));
    expect(await screen.findByRole('link', { name: /Call 3/ })).toBeInTheDocument();
    const second = listRequests(requests)[1];
    expect(second?.get('cursor')).toBe('c29tZXdoZXJl');
    expect(second?.get('q')).toBe('needle');
    // The search got to the end: nothing more to say.
    expect(screen.queryByRole('note')).not.toBeInTheDocument();
    expect(screen.getByText('All 2 calls are shown.')).toBeInTheDocument();
  });

  it('says when the search text was a phone number, and searches it as text on request', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls', ({ request }) => {
        const q = new URL(request.url).searchParams.get('q');
        return HttpResponse.json(
          q === '07400 123456'
            ? {
                ...callList([callSummary({ id: 7 })]),
                search: { complete: true, scanned: 1, scannedBack: null, phone: '+447400123456' },
              }
            : {
                ...callList([callSummary({ id: 9 })]),
                search: { complete: true, scanned: 40, scannedBack: null },
              },
        );
      }),
    );
    const { user, location } = renderApp('/history?q=07400+123456');
    await screen.findByRole('link', { name: /Call 7/ });
    expect(
      screen.getByText(/^Searching for the phone number \+447400123456: the calls made for it\./),
    ).toBeInTheDocument();

    await user.click(screen.getByRole('link', { name: 'Search for it as text' }));
    await screen.findByRole('link', { name: /Call 9/ });
    expect(location().search).toBe('?q=%2207400+123456%22');
    expect(listRequests(requests).at(-1)?.get('q')).toBe('"07400 123456"');
    expect(screen.getByLabelText('Text')).toHaveValue('"07400 123456"');
    expect(screen.queryByText(/Searching for the phone number/)).not.toBeInTheDocument();
  });

  it('does not say "no calls match" when the search stopped before finding any', async () => {
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.json({
          ...callList([], 'c29tZXdoZXJl'),
          search: { complete: false, scanned: 31_000, scannedBack: '2026-11-12T14:02:00.000Z' },
        }),
      ),
    );
    renderApp('/history?q=needle');
    const note = await screen.findByRole('note');
    expect(note).toHaveTextContent(/^Searched back to calls from .+ without finding a match yet\. Narrow/);
    expect(screen.queryByText('No calls match these filters.')).not.toBeInTheDocument();
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Load more' })).toBeEnabled();
  });

  it('opens a call from anywhere on its row, by mouse or by keyboard', async () => {
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.json(
          callList([callSummary({ id: 7 }), callSummary({ id: 6, callerIp: '198.51.100.4' })]),
        ),
      ),
      http.get('/api/calls/:id', ({ params }) => HttpResponse.json(callDetail({ id: Number(params.id) }))),
    );
    const first = renderApp('/history?outcome=ok');
    await first.user.click(await screen.findByText('198.51.100.4'));
    expect(first.location().pathname).toBe('/history/6');
    // Back to History returns to the view it was opened from.
    const back = await screen.findByRole('link', { name: '← Back to History' });
    expect(back).toHaveAttribute('href', '/history?outcome=ok');
    // And puts the keyboard back on the call opened.
    await first.user.click(back);
    expect(await screen.findByRole('link', { name: /Call 6/ })).toHaveFocus();
    expect(first.location().search).toBe('?outcome=ok');
    first.unmount();

    const second = renderApp('/history');
    const link = await screen.findByRole('link', { name: /Call 7/ });
    // The row's link is its one stop for the keyboard.
    await second.user.tab();
    while (document.activeElement !== link && document.activeElement !== document.body)
      await second.user.tab();
    expect(link).toHaveFocus();
    await second.user.keyboard('{Enter}');
    expect(second.location().pathname).toBe('/history/7');
  });

  it('says how many calls the view holds, or that there are more than it counts', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls', () => HttpResponse.json(callList([callSummary()], 'bmV4dA'))),
      http.get('/api/calls/count', ({ request }) =>
        HttpResponse.json(
          new URL(request.url).searchParams.get('outcome') === 'client-error'
            ? { count: 1234, more: false }
            : { count: 10_000, more: true },
        ),
      ),
    );
    const { user } = renderApp('/history');
    expect(await screen.findByText('More than 10,000 calls recorded.')).toBeInTheDocument();
    await user.selectOptions(screen.getByLabelText('Outcome'), 'Refused (client error)');
    expect(await screen.findByText('1,234 calls match.')).toBeInTheDocument();
    const counted = requests.filter((r) => new URL(r.url).pathname === '/api/calls/count');
    expect(new URL(counted.at(-1)?.url ?? '').searchParams.get('outcome')).toBe('client-error');
  });

  it('does not count a free-text search, whose search stops on a time budget', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/calls', () => HttpResponse.json(callList([callSummary()]))));
    renderApp('/history?q=needle');
    await screen.findByRole('table');
    expect(requests.filter((r) => new URL(r.url).pathname === '/api/calls/count')).toEqual([]);
  });

  it('filters the calls of no recognised operation', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/calls', () =>
        HttpResponse.json(
          callList([callSummary({ operation: null, group: 'AuthCodeSending', params: null })]),
        ),
      ),
    );
    const { user, location } = renderApp('/history');
    await screen.findByRole('table');
    await user.selectOptions(screen.getByLabelText('Operation'), 'Unknown operation');
    await waitFor(() => expect(new URLSearchParams(location().search).get('operation')).toBe('(unknown)'));
    await waitFor(() => expect(listRequests(requests).at(-1)?.get('operation')).toBe('(unknown)'));
  });

  it("shows the problem's title and detail when the history cannot be loaded", async () => {
    server.use(
      http.get('/api/calls', () =>
        problemJson(problem(400, 'Invalid query: from must be an ISO date and time.')),
      ),
    );
    renderApp('/history');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Could not load the history: Invalid request (400)');
    expect(alert).toHaveTextContent('Invalid query: from must be an ISO date and time.');
  });
});
