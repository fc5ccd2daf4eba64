import {
  CSRF_HEADER,
  ERASED,
  EXAMPLE_PHONE,
  examplePhone,
  type PrivacyErasure,
  type PrivacyReport,
} from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import {
  attempt,
  auditEntry,
  callDetail,
  delivery,
  deliveryDetail,
  operatorSession,
  problem,
  serviceInfo,
} from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const PHONE = 'Phone number';
const FIND = 'Find everything held';

/** What the server holds about EXAMPLE_PHONE: an AuthCode call, its SMS (one more on its way), a Send's audit entry. */
function report(overrides: Partial<PrivacyReport> = {}): PrivacyReport {
  return {
    phone: EXAMPLE_PHONE,
    forms: [EXAMPLE_PHONE, '447400123456', '07400123456', '7400123456'],
    generatedAt: '2026-11-20T09:00:00.000Z',
    calls: [
      {
        ...callDetail({
          id: 7,
          params: { code: '***', phone: EXAMPLE_PHONE },
          note: `SMS queued to ${EXAMPLE_PHONE}.`,
        }),
        heldIn: ['phone', 'params', 'request', 'note'],
      },
    ],
    deliveries: [
      deliveryDetail(delivery({ id: 12, callId: 7, recipient: EXAMPLE_PHONE, status: 'sent', attempts: 1 }), [
        attempt({ id: 100, provider: 'twilio', outcome: 'sent', status: 201 }),
      ]),
      deliveryDetail(
        delivery({
          id: 14,
          callId: 9,
          recipient: EXAMPLE_PHONE,
          status: 'pending',
          attempts: 1,
          sentAt: null,
        }),
        [attempt({ id: 101, provider: 'twilio', outcome: 'transient', status: 503 })],
      ),
    ],
    audit: [
      auditEntry({
        id: 31,
        action: 'send',
        target: 'call 9',
        details: { operation: 'AuthCode', phone: EXAMPLE_PHONE },
      }),
    ],
    limitSlots: 2,
    ...overrides,
  };
}

const erasure = (overrides: Partial<PrivacyErasure> = {}): PrivacyErasure => ({
  hash: '9f2c4e1a7b3d5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0e1f2a3b4c',
  calls: 2,
  deliveries: 2,
  cancelled: 1,
  attempts: 2,
  audit: 1,
  limitSlots: 2,
  rollups: 0,
  disk: { walTruncated: true, vacuumed: [] },
  tookMs: 41.7,
  ...overrides,
});

const reportRequests = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/privacy/report');
const erasures = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/privacy/erase');

/** Types what the phone field's placeholder prints, as an admin copying the example would. */
async function typePlaceholder(user: ReturnType<typeof renderApp>['user']): Promise<string> {
  const field = screen.getByLabelText(PHONE);
  await waitFor(() => expect(field).toHaveAttribute('placeholder'));
  const printed = (field.getAttribute('placeholder') ?? '').replace(/^e\.g\. /, '');
  await user.type(field, printed);
  return printed;
}

describe('Privacy', () => {
  it('is in the navigation of admins only, and tells an operator it is for admins without asking', async () => {
    const view = renderApp('/privacy');
    const nav = await screen.findByRole('navigation', { name: 'Main' });
    expect(within(nav).getByRole('link', { name: 'Privacy' })).toHaveAttribute('href', '/privacy');
    expect(await screen.findByRole('heading', { name: 'Privacy', level: 1 })).toBeInTheDocument();
    view.unmount();

    const requests = recordRequests();
    server.use(http.get('/api/session', () => HttpResponse.json(operatorSession())));
    renderApp('/privacy');
    expect(await screen.findByRole('heading', { name: 'You cannot open this page' })).toBeInTheDocument();
    expect(screen.getByRole('alert')).toHaveTextContent('This page is for admins only.');
    expect(
      within(screen.getByRole('navigation', { name: 'Main' })).queryByRole('link', { name: 'Privacy' }),
    ).not.toBeInTheDocument();
    expect(requests.filter((r) => new URL(r.url).pathname.startsWith('/api/privacy'))).toEqual([]);
  });

  it('finds everything held about the number its placeholder prints: calls, deliveries with attempts, audit entries', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/privacy/report', () => HttpResponse.json(report())));
    const { user } = renderApp('/privacy');
    await screen.findByRole('heading', { name: 'Privacy', level: 1 });
    // No region set on the server: the GB mobile every example of the console prints.
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAttribute('placeholder', `e.g. ${EXAMPLE_PHONE}`),
    );
    expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
      'As the parent gave it, spaces, dashes and dots included: with + and the country code.',
    );
    expect(await typePlaceholder(user)).toBe(EXAMPLE_PHONE);
    await user.click(screen.getByRole('button', { name: FIND }));

    const heading = await screen.findByRole('heading', { name: `Held about ${EXAMPLE_PHONE}`, level: 2 });
    expect(heading).toHaveFocus();
    expect(reportRequests(requests).map((r) => new URL(r.url).searchParams.get('phone'))).toEqual([
      EXAMPLE_PHONE,
    ]);
    for (const form of ['447400123456', '07400123456']) expect(screen.getByText(form)).toBeInTheDocument();

    const calls = screen.getByRole('table', { name: 'Calls (1)' });
    expect(
      within(calls)
        .getAllByRole('columnheader')
        .map((th) => th.textContent),
    ).toEqual(['Call', 'Time', 'Operation', 'Protocol', 'Number found in', 'Result']);
    const [, call] = within(calls).getAllByRole('row');
    if (!call) throw new Error('no call row');
    expect(within(call).getByRole('link', { name: 'Call #7' })).toHaveAttribute('href', '/history/7');
    expect(call.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:15:30.000Z');
    expect(call).toHaveTextContent('AuthCode');
    expect(call).toHaveTextContent('SOAP 1.1');
    expect(call).toHaveTextContent('The number it was for, parameters, raw request and note');
    // Its verdict from its delivery in the report.
    expect(call).toHaveTextContent('Answered · SMS sent');

    const deliveries = screen.getByRole('table', { name: 'Deliveries (2)' });
    const [, sent, pending] = within(deliveries).getAllByRole('row');
    if (!sent || !pending) throw new Error('missing delivery rows');
    expect(within(sent).getByRole('link', { name: 'Delivery #12' })).toHaveAttribute(
      'href',
      '/deliveries/12',
    );
    expect(within(sent).getByRole('link', { name: 'Call #7' })).toHaveAttribute('href', '/history/7');
    expect(sent).toHaveTextContent('Sent');
    expect(sent).toHaveTextContent('Sent (HTTP 201)');
    expect(pending).toHaveTextContent('Pending');
    expect(pending).toHaveTextContent('Transient error (HTTP 503)');

    const audit = screen.getByRole('table', { name: 'Audit entries (1)' });
    expect(audit).toHaveTextContent('Sent from the console');
    expect(audit).toHaveTextContent('call 9');

    // The same report to download, for the number as the server read it.
    expect(screen.getByRole('link', { name: 'Download CSV' })).toHaveAttribute(
      'href',
      `/api/privacy/report?phone=${encodeURIComponent(EXAMPLE_PHONE)}&format=csv`,
    );
    expect(screen.getByRole('link', { name: 'Download JSON' })).toHaveAttribute(
      'href',
      `/api/privacy/report?phone=${encodeURIComponent(EXAMPLE_PHONE)}&format=json`,
    );
    expect(screen.getByRole('link', { name: 'Download JSON' })).toHaveAttribute(
      'download',
      'privacy-report-20261120T090000.json',
    );
  });

  it("prints a mobile of the server's region, and sends the number however it was typed", async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/service', () => HttpResponse.json({ ...serviceInfo, defaultPhoneRegion: 'FR' })),
      http.get('/api/privacy/report', ({ request }) => {
        const phone = new URL(request.url).searchParams.get('phone');
        return HttpResponse.json(report({ phone: '+33612345678', forms: [phone ?? ''], calls: [] }));
      }),
    );
    const { user } = renderApp('/privacy');
    await screen.findByRole('heading', { name: 'Privacy', level: 1 });
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAttribute('placeholder', `e.g. ${examplePhone('FR')}`),
    );
    expect(examplePhone('FR')).toBe('+33612345678');
    expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
      "As the parent gave it, spaces, dashes and dots included: with + and the country code, or as dialled in the server's region: France.",
    );
    expect(await typePlaceholder(user)).toBe('+33612345678');
    await user.click(screen.getByRole('button', { name: FIND }));
    expect(await screen.findByRole('heading', { name: 'Held about +33612345678' })).toBeInTheDocument();

    await user.clear(screen.getByLabelText(PHONE));
    await user.type(screen.getByLabelText(PHONE), ' 06 12-34.56 78 ');
    await user.click(screen.getByRole('button', { name: FIND }));
    await waitFor(() => expect(reportRequests(requests)).toHaveLength(2));
    // Trimmed, and otherwise as typed: the server reads it.
    expect(new URL(reportRequests(requests)[1]?.url ?? '').searchParams.get('phone')).toBe('06 12-34.56 78');
  });

  it('says when nothing is held, and asks for a number before asking the server', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/privacy/report', () =>
        HttpResponse.json(report({ calls: [], deliveries: [], audit: [], limitSlots: 0 })),
      ),
    );
    const { user } = renderApp('/privacy');
    await user.click(await screen.findByRole('button', { name: FIND }));
    expect(await screen.findByText('Type the phone number to look for.')).toBeInTheDocument();
    expect(screen.getByLabelText(PHONE)).toHaveAttribute('aria-invalid', 'true');
    expect(reportRequests(requests)).toEqual([]);

    await user.type(screen.getByLabelText(PHONE), EXAMPLE_PHONE);
    await user.click(screen.getByRole('button', { name: FIND }));
    expect(await screen.findByText('Nothing is held about this number.')).toBeInTheDocument();
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
  });

  it("shows the server's refusal of what was typed under the field, and other failures below the form", async () => {
    const unreadable =
      'This is not a phone number. Write it with + and the country code, or as dialled at home.';
    server.use(http.get('/api/privacy/report', () => problemJson(problem(400, unreadable))));
    const { user } = renderApp('/privacy');
    await user.type(await screen.findByLabelText(PHONE), '12345');
    await user.click(screen.getByRole('button', { name: FIND }));
    expect(await screen.findByText(unreadable)).toBeInTheDocument();
    expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(expect.stringContaining(unreadable));
    expect(screen.getByLabelText(PHONE)).toHaveAttribute('aria-invalid', 'true');

    server.use(
      http.get('/api/privacy/report', () =>
        problemJson(problem(500, 'The database did not answer in time.')),
      ),
    );
    await user.clear(screen.getByLabelText(PHONE));
    await user.type(screen.getByLabelText(PHONE), EXAMPLE_PHONE);
    await user.click(screen.getByRole('button', { name: FIND }));
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'No report: The database did not answer in time. (HTTP 500)',
    );
    expect(screen.queryByRole('heading', { level: 2, name: /Held about/ })).not.toBeInTheDocument();
  });

  it('erases the number after saying plainly what will happen, then shows what was changed', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/privacy/report', () => HttpResponse.json(report())),
      http.post('/api/privacy/erase', () => HttpResponse.json(erasure())),
    );
    const { user } = renderApp('/privacy');
    await user.type(await screen.findByLabelText(PHONE), '+44 7400 123456');
    await user.click(screen.getByRole('button', { name: FIND }));
    await screen.findByRole('heading', { name: `Held about ${EXAMPLE_PHONE}` });

    const erase = screen.getByRole('button', { name: 'Erase this number' });
    await user.click(erase);
    const question = screen.getByRole('group', {
      name: `Erase ${EXAMPLE_PHONE} from everything this service holds?`,
    });
    const yes = within(question).getByRole('button', { name: 'Yes, erase this number' });
    expect(yes).toHaveFocus();
    const said = yes.getAttribute('aria-describedby') ?? '';
    const what = document.getElementById(said);
    expect(what).toHaveTextContent(
      '1 delivery still on its way to it is cancelled first: it will not be sent.',
    );
    expect(what).toHaveTextContent(`The number is replaced by “${ERASED}” everywhere it is held`);
    expect(what).toHaveTextContent('This cannot be undone');
    expect(what).toHaveTextContent('Backups taken before now still hold the number');
    expect(what).toHaveTextContent('by a keyed hash of the number, never the number itself');

    // Cancel (or Escape) asks nothing and gives the keyboard back.
    await user.click(within(question).getByRole('button', { name: 'Cancel' }));
    expect(screen.getByRole('button', { name: 'Erase this number' })).toHaveFocus();
    await user.click(screen.getByRole('button', { name: 'Erase this number' }));
    await user.keyboard('{Escape}');
    expect(screen.getByRole('button', { name: 'Erase this number' })).toHaveFocus();
    expect(erasures(requests)).toEqual([]);

    await user.click(screen.getByRole('button', { name: 'Erase this number' }));
    await user.click(screen.getByRole('button', { name: 'Yes, erase this number' }));
    const done = await screen.findByRole('heading', { name: `Erased ${EXAMPLE_PHONE}`, level: 2 });
    expect(done).toHaveFocus();
    const [post] = erasures(requests);
    // The number as the server read it, with the header every change carries.
    expect(await post?.json()).toEqual({ phone: EXAMPLE_PHONE });
    expect(post?.headers.get(CSRF_HEADER)).toBe('school-console');

    const counts = done.closest('section') as HTMLElement;
    const shown = Object.fromEntries(
      within(counts)
        .getAllByRole('term')
        .map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
    );
    expect(shown).toEqual({
      Calls: `2 (still in History and the counts, saying “${ERASED}”)`,
      Deliveries: '2 (1 of them on their way, cancelled first)',
      'Delivery attempts': '2',
      'Audit entries': '1',
      'AuthCode limit slots': '2',
      'Dashboard figures': '0 rows',
      'On disk': 'SQLite: freed pages overwritten, and the write-ahead log checkpointed and truncated.',
      'Audited as': erasure().hash,
      Took: '42 ms',
    });
    // The report described what is no longer there, and the field held the number.
    expect(screen.queryByRole('heading', { name: /Held about/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Erase this number' })).not.toBeInTheDocument();
    expect(screen.getByLabelText(PHONE)).toHaveValue('');
  });

  it("says what PostgreSQL's VACUUM did, and keeps the report when the erasure is refused", async () => {
    let refuse = true;
    server.use(
      http.get('/api/privacy/report', () => HttpResponse.json(report({ deliveries: [] }))),
      http.post('/api/privacy/erase', () =>
        refuse
          ? problemJson(problem(503, 'The database is read-only: this server is a replica.'))
          : HttpResponse.json(
              erasure({ cancelled: 0, disk: { walTruncated: null, vacuumed: ['calls_p20261101', 'audit'] } }),
            ),
      ),
    );
    const { user } = renderApp('/privacy');
    await user.type(await screen.findByLabelText(PHONE), EXAMPLE_PHONE);
    await user.click(screen.getByRole('button', { name: FIND }));
    await user.click(await screen.findByRole('button', { name: 'Erase this number' }));
    expect(
      screen.getByText('Anything still on its way to it is cancelled first and will not be sent.'),
    ).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Yes, erase this number' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Not erased: The database is read-only: this server is a replica. (HTTP 503)',
    );
    expect(screen.getByRole('heading', { name: `Held about ${EXAMPLE_PHONE}` })).toBeInTheDocument();

    refuse = false;
    await user.click(screen.getByRole('button', { name: 'Yes, erase this number' }));
    expect(await screen.findByRole('heading', { name: `Erased ${EXAMPLE_PHONE}` })).toBeInTheDocument();
    expect(
      screen.getByText(
        "PostgreSQL: VACUUM run on calls_p20261101, audit (the old rows' space is freed for reuse; it is overwritten only as new rows take it).",
      ),
    ).toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });
});
