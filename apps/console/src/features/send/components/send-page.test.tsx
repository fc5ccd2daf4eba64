import { EXAMPLE_PHONE, type ServiceInfo } from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import {
  callList,
  callSummary,
  operationResult,
  operatorSession,
  problem,
  serviceInfo,
} from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server, sessionThatEnds } from '../../../testing/server';

const PHONE = 'Phone number (phone)';
const CODE = 'Verification code (code)';
const SCHOOL_URL = 'School base URL (baseUrlSchool)';
/** The server's GET /api/service with its phone settings. */
const phoneSettings = (defaultPhoneRegion: string | null, allowedCountries: string[] | null) =>
  http.get('/api/service', () =>
    HttpResponse.json({
      ...serviceInfo,
      defaultPhoneRegion,
      smsDestinations: { ...serviceInfo.smsDestinations, allowedCountries },
    } satisfies ServiceInfo),
  );
/** GET /api/operations/schools: two schools, for an organisation-wide user or one limited to them. */
const sendSchools = (organisationWide: boolean) => ({
  items: [
    { id: 1, name: 'Northfield Academy', baseUrl: 'https://northfield.example.org' },
    { id: 2, name: 'Riverside School', baseUrl: 'https://riverside.example.org' },
  ],
  organisationWide,
});
const operationPosts = (requests: Request[]) =>
  requests.filter((r) => r.method === 'POST' && new URL(r.url).pathname.startsWith('/api/operations/'));

/** An SMS gateway whose circuit is open: failing, paused. */
const failing = {
  name: 'http',
  id: 'http',
  description: 'http: the school gateway',
  circuit: { state: 'open' as const, since: '2026-11-20T08:10:00.000Z', until: '2026-11-20T08:10:30.000Z' },
  refusing: null,
};

describe('Send', () => {
  it('says before sending that SMS are paused while the provider fails, and which provider takes over', async () => {
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({ ...serviceInfo, providers: { ...serviceInfo.providers, sms: failing } }),
      ),
    );
    renderApp('/send/AuthCode');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Sending SMS is paused');
    expect(alert).toHaveTextContent('The provider (http) failed repeatedly');
    expect(alert).toHaveTextContent(/so nothing is sent to it until .+, when it is tried again\./);
    expect(alert.querySelectorAll('time')[1]).toHaveAttribute('datetime', '2026-11-20T08:10:30.000Z');
    expect(alert).toHaveTextContent('an auth code is never sent after its validity');
  });

  it('says SMS go through the fallback while the primary is paused', async () => {
    const fallback = {
      name: 'twilio',
      id: 'twilio-fallback',
      description: 'twilio: from +44…',
      circuit: { state: 'closed' as const, since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: null,
    };
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: { ...serviceInfo.providers, sms: failing, smsFallback: fallback },
        }),
      ),
    );
    renderApp('/send/AuthCode');
    expect(
      await screen.findByText(
        /SMS go through the fallback provider \(twilio-fallback\) for now: http failed repeatedly/,
      ),
    ).toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('says before sending that the SMS provider refuses every message, in its own words, and what to do', async () => {
    // Its circuit closed: a refused account is nothing a cool-down cures.
    const refusing = {
      ...failing,
      circuit: { state: 'closed' as const, since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: {
        reason: 'account suspended',
        status: 403,
        since: new Date(Date.now() - 1000).toISOString(),
        refusals: 12,
        attempts: 12,
      },
    };
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({ ...serviceInfo, providers: { ...serviceInfo.providers, sms: refusing } }),
      ),
    );
    renderApp('/send/AuthCode');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('The SMS provider refuses every message');
    expect(alert).toHaveTextContent(
      /The SMS provider \(http\) is refusing: account suspended \(HTTP 403\) since .+, 12 of the last 12\./,
    );
    expect(alert).toHaveTextContent('What you send now will most likely be refused too.');
    expect(alert).toHaveTextContent('Fix the account with the provider; retries will not help until then.');
  });

  it('says a refused SMS goes to the fallback provider while the primary refuses', async () => {
    const refusing = {
      ...failing,
      circuit: { state: 'closed' as const, since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: {
        reason: 'account suspended',
        status: 403,
        since: new Date().toISOString(),
        refusals: 3,
        attempts: 3,
      },
    };
    const fallback = {
      name: 'twilio',
      id: 'twilio-fallback',
      description: 'twilio: from +44…',
      circuit: { state: 'closed' as const, since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: null,
    };
    server.use(
      http.get('/api/service', () =>
        HttpResponse.json({
          ...serviceInfo,
          providers: { ...serviceInfo.providers, sms: refusing, smsFallback: fallback },
        }),
      ),
    );
    renderApp('/send/AuthCode');
    expect(
      await screen.findByText(
        /is refusing: account suspended \(HTTP 403\) since .+, 3 of the last 3\. What you send now goes to the fallback provider \(twilio-fallback\) once http refuses it\./,
      ),
    ).toBeInTheDocument();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('opens on the first operation with one form per operation to pick from', async () => {
    const { location } = renderApp('/send');
    expect(
      await screen.findByRole('heading', { name: 'Send a login code AuthCode', level: 2 }),
    ).toBeInTheDocument();
    expect(location().pathname).toBe('/send/AuthCode');
    const operations = screen.getByRole('navigation', { name: 'Operations' });
    const names = within(operations)
      .getAllByRole('link')
      .map((a) => a.textContent);
    // What each does first, the name a school's server calls it by beside.
    expect(names).toEqual([
      'Send a login code AuthCode',
      "Get a term's book GetBookPdfByTerm",
      'Notify a school SendNotificationType',
      'Notify a class of new marks SendMarkNotes',
      'Send waiting pushes now pushNoti',
    ]);
    const main = screen.getByRole('navigation', { name: 'Main' });
    expect(
      within(main)
        .getAllByRole('link')
        .map((a) => a.textContent),
    ).toEqual([
      'Dashboard',
      'Send',
      'History',
      'Deliveries',
      'Books',
      'Schools',
      'Templates',
      'Users',
      'Audit',
      'Privacy',
      'Service',
    ]);
  });

  it("labels each field in words with its parameter beside, and describes it with the contract's description", async () => {
    const { user } = renderApp('/send/AuthCode');
    const phone = await screen.findByLabelText(PHONE);
    expect(phone).toHaveAccessibleDescription(
      'The phone number, in international format (+ and country code).',
    );
    expect(screen.getByLabelText(CODE)).toHaveAccessibleDescription(/1 to 16 letters or digits/);

    await user.click(screen.getByRole('link', { name: 'Notify a school SendNotificationType' }));
    expect(await screen.findByLabelText('Item id (id)')).toBeInTheDocument();
    expect(screen.getByLabelText(SCHOOL_URL)).toBeInTheDocument();
    expect(screen.getByLabelText('Notification type (TypeNotfication)')).toBeInTheDocument();
  });

  it('shows the validation messages of the contract before any request is sent', async () => {
    const requests = recordRequests();
    const { user } = renderApp('/send/AuthCode');
    // code left empty, phone not a number.
    await user.type(await screen.findByLabelText(PHONE), '12345');
    await user.click(screen.getByRole('button', { name: 'Send' }));

    const phone = screen.getByLabelText(PHONE);
    const code = screen.getByLabelText(CODE);
    const phoneMessage =
      "'12345' is not a valid phone number. Write it with + and the country code, e.g. +447400123456.";
    expect(await screen.findByText(phoneMessage)).toBeInTheDocument();
    expect(screen.getByText('Enter the code.')).toBeInTheDocument();
    expect(phone).toHaveAttribute('aria-invalid', 'true');
    expect(phone).toHaveAccessibleDescription(new RegExp(phoneMessage.replace(/[.+]/g, '\\$&')));
    expect(code).toHaveAttribute('aria-invalid', 'true');
    expect(operationPosts(requests)).toHaveLength(0);

    // Emptied, the phone is asked for; fixed, its message goes; the code is still refused.
    await user.clear(phone);
    expect(await screen.findByText('Enter a phone number.')).toBeInTheDocument();
    await user.type(phone, '+447911123456');
    await waitFor(() =>
      expect(screen.queryByText(/not a valid phone number|Enter a phone/)).not.toBeInTheDocument(),
    );
    expect(phone).not.toHaveAttribute('aria-invalid');
    await user.type(code, '12 34');
    expect(await screen.findByText('A code is 1 to 16 letters or digits, nothing else.')).toBeInTheDocument();
  });

  it('sends valid values and shows the outcome with a link to the call in History', async () => {
    const requests = recordRequests();
    server.use(
      http.post('/api/operations/AuthCode', () =>
        HttpResponse.json(operationResult({ id: 42, message: 'SMS queued to +447911123456.', queued: 1 })),
      ),
    );
    const { user } = renderApp('/send/AuthCode');
    await user.type(await screen.findByLabelText(CODE), '4821');
    await user.type(screen.getByLabelText(PHONE), '+447911123456');
    await user.click(screen.getByRole('button', { name: 'Send' }));

    // The verdict, what was queued for whom in the service's words, and the wire's answer as a detail.
    expect(await screen.findByText('SMS queued to +447911123456.')).toBeInTheDocument();
    expect(document.querySelector('.outcome-region')).toHaveTextContent('Answered · SMS queued');
    expect(document.querySelector('.outcome-region .wire-answer')).toHaveTextContent('Wire answer: HTTP 200');
    expect(screen.getByRole('link', { name: 'View call #42 in History' })).toHaveAttribute(
      'href',
      '/history/42',
    );

    const [post] = operationPosts(requests);
    expect(post?.headers.get('content-type')).toBe('application/json');
    expect(await post?.json()).toEqual({ code: '4821', phone: '+447911123456' });
  });

  it('offers the schools one may send for in the school field, by name, to operators too', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/operations/schools', () => HttpResponse.json(sendSchools(true))));
    const view = renderApp('/send/SendNotificationType');
    const field = await screen.findByLabelText(SCHOOL_URL);
    await waitFor(() => expect(field).toHaveAttribute('list'));
    const list = document.getElementById(field.getAttribute('list') ?? '');
    expect(Array.from(list?.querySelectorAll('option') ?? []).map((o) => [o.value, o.textContent])).toEqual([
      ['https://northfield.example.org', 'Northfield Academy'],
      ['https://riverside.example.org', 'Riverside School'],
    ]);
    // Nothing picked for them: an organisation-wide user types or picks.
    expect(field).toHaveValue('');
    view.unmount();

    server.use(http.get('/api/session', () => HttpResponse.json(operatorSession())));
    const asked = requests.length;
    renderApp('/send/SendNotificationType');
    await waitFor(async () => expect(await screen.findByLabelText(SCHOOL_URL)).toHaveAttribute('list'));
    // No request an operator would be refused.
    expect(requests.slice(asked).some((r) => new URL(r.url).pathname === '/api/schools')).toBe(false);
  });

  describe('the school a send is for', () => {
    it('lets organisation-wide staff pick one, or none, for an AuthCode', async () => {
      const requests = recordRequests();
      server.use(
        http.get('/api/operations/schools', () => HttpResponse.json(sendSchools(true))),
        http.post('/api/operations/AuthCode', () => HttpResponse.json(operationResult({ queued: 1 }))),
      );
      const { user } = renderApp('/send/AuthCode');
      const select = await screen.findByLabelText('School');
      await waitFor(() =>
        expect(
          within(select)
            .getAllByRole('option')
            .map((o) => o.textContent),
        ).toEqual(['No particular school', 'Northfield Academy', 'Riverside School']),
      );
      expect(select).toHaveValue('');
      expect(select).toHaveAccessibleDescription(/Which school this is for, if one/);
      await user.click(screen.getByRole('button', { name: 'Fill with examples' }));
      await user.click(screen.getByRole('button', { name: 'Send' }));
      await screen.findByText(/Sent|Queued|queued/);
      await user.selectOptions(select, 'Riverside School');
      await user.click(screen.getByRole('button', { name: 'Send' }));
      await waitFor(() => expect(operationPosts(requests)).toHaveLength(2));
      const [none, riverside] = operationPosts(requests);
      expect(await none?.json()).not.toHaveProperty('schoolId');
      expect(await riverside?.json()).toMatchObject({ schoolId: 2 });
    });

    it('asks a user limited to schools which of theirs, and preselects their only one', async () => {
      const requests = recordRequests();
      server.use(
        http.get('/api/session', () => HttpResponse.json(operatorSession())),
        http.get('/api/operations/schools', () => HttpResponse.json(sendSchools(false))),
        http.post('/api/operations/pushNoti', () => HttpResponse.json(operationResult({ queued: 0 }))),
      );
      const view = renderApp('/send/pushNoti');
      const select = await screen.findByLabelText('School');
      await waitFor(() => expect(within(select).getAllByRole('option')).toHaveLength(3));
      expect(select).toHaveValue('');
      await view.user.click(screen.getByRole('button', { name: 'Send' }));
      expect(await screen.findByText('Pick the school this is for.')).toBeInTheDocument();
      expect(select).toHaveAttribute('aria-invalid', 'true');
      expect(operationPosts(requests)).toHaveLength(0);
      await view.user.selectOptions(select, 'Northfield Academy');
      await view.user.click(screen.getByRole('button', { name: 'Send' }));
      await waitFor(() => expect(operationPosts(requests)).toHaveLength(1));
      expect(await operationPosts(requests)[0]?.json()).toEqual({ schoolId: 1 });
      view.unmount();

      // One school: it is picked for them, here and in the school URL of a notification.
      server.use(
        http.get('/api/operations/schools', () =>
          HttpResponse.json({ items: sendSchools(false).items.slice(0, 1), organisationWide: false }),
        ),
      );
      const again = renderApp('/send/pushNoti');
      const only = await screen.findByLabelText('School');
      await waitFor(() => expect(only).toHaveValue('1'));
      expect(
        within(only)
          .getAllByRole('option')
          .map((o) => o.textContent),
      ).toEqual(['Northfield Academy']);
      again.unmount();
      renderApp('/send/SendMarkNotes');
      await waitFor(async () =>
        expect(await screen.findByLabelText(SCHOOL_URL)).toHaveValue('https://northfield.example.org'),
      );
      expect(screen.queryByLabelText('School')).not.toBeInTheDocument();
    });

    it('shows the server’s refusal of the school under the School select', async () => {
      const detail = 'You may not act for that school: your account is limited to other schools.';
      server.use(
        http.get('/api/operations/schools', () => HttpResponse.json(sendSchools(true))),
        http.post('/api/operations/pushNoti', () =>
          problemJson(problem(403, detail, { errors: { schoolId: detail }, callId: 45 })),
        ),
      );
      const { user } = renderApp('/send/pushNoti');
      const select = await screen.findByLabelText('School');
      await waitFor(() => expect(within(select).getAllByRole('option')).toHaveLength(3));
      await user.selectOptions(select, 'Riverside School');
      await user.click(screen.getByRole('button', { name: 'Send' }));
      await waitFor(() => expect(select).toHaveAccessibleDescription(new RegExp(detail.slice(0, 30))));
      expect(select).toHaveAttribute('aria-invalid', 'true');
    });
  });

  it('keeps what was typed when the session ends under way, back after logging in; never the auth code', async () => {
    const staffSession = sessionThatEnds();
    server.use(
      http.post('/api/operations/AuthCode', () => {
        staffSession.end();
        return problemJson(problem(401, 'Your session has ended.'));
      }),
    );
    const { user, location } = renderApp('/send/AuthCode');
    await user.type(await screen.findByLabelText(CODE), '4821');
    await user.type(screen.getByLabelText(PHONE), '+447911123456');
    await user.click(screen.getByRole('button', { name: 'Send' }));

    expect(await screen.findByText('Your session ended; log in to go on.')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Log in' }));
    await waitFor(() => expect(location().pathname).toBe('/send/AuthCode'));
    await waitFor(() => expect(screen.getByLabelText(PHONE)).toHaveValue('+447911123456'));
    expect(screen.getByLabelText(CODE)).toHaveValue('');
  });

  it("shows the server's problem detail, with the refused parameter's message under its field", async () => {
    const detail = "Unknown school: 'https://unknown.example.org/' is not a registered school.";
    server.use(
      http.post('/api/operations/SendMarkNotes', () =>
        problemJson(problem(400, detail, { errors: { baseUrlSchool: detail }, callId: 43 })),
      ),
    );
    const { user } = renderApp('/send/SendMarkNotes');
    await user.type(await screen.findByLabelText('Marks entry id (id)'), '88');
    await user.type(screen.getByLabelText('Class (id_class)'), '7B');
    await user.type(screen.getByLabelText(SCHOOL_URL), 'https://unknown.example.org/');
    await user.click(screen.getByRole('button', { name: 'Send' }));

    // The call's verdict, as History gives it.
    expect(await screen.findByText(/Refused: unknown school \(400\)/)).toBeInTheDocument();
    expect(screen.getByLabelText(SCHOOL_URL)).toHaveAccessibleDescription(
      new RegExp(`${detail.slice(0, 20)}`),
    );
    expect(screen.getByLabelText(SCHOOL_URL)).toHaveAttribute('aria-invalid', 'true');
    // Beside it, for an admin, the way to register the school: the URL typed goes along.
    expect(screen.getByRole('link', { name: 'Register it on the Schools page' })).toHaveAttribute(
      'href',
      '/schools?baseUrl=https%3A%2F%2Funknown.example.org%2F',
    );
    expect(screen.getByRole('link', { name: 'View call #43 in History' })).toHaveAttribute(
      'href',
      '/history/43',
    );
  });

  it('shows a problem without field errors, e.g. no book for that term and class', async () => {
    const detail = "No book exists for term '2026-1' and class '7B'.";
    server.use(
      http.post('/api/operations/GetBookPdfByTerm', () => problemJson(problem(404, detail, { callId: 44 }))),
    );
    const { user } = renderApp('/send/GetBookPdfByTerm');
    await user.click(await screen.findByRole('button', { name: 'Fill with examples' }));
    await user.click(screen.getByRole('button', { name: 'Send' }));
    expect(await screen.findByText(detail)).toBeInTheDocument();
    expect(screen.getByText(/Refused: no such book \(404\)/)).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'View call #44 in History' })).toHaveAttribute(
      'href',
      '/history/44',
    );
  });

  it('sends pushNoti, which has no fields, with just the Send button', async () => {
    const requests = recordRequests();
    server.use(
      http.post('/api/operations/pushNoti', () =>
        HttpResponse.json(operationResult({ id: 45, message: 'Done. 3 pushes dispatched.' })),
      ),
    );
    const { user } = renderApp('/send/pushNoti');
    expect(await screen.findByText('This operation takes no parameters.')).toBeInTheDocument();
    expect(screen.queryByRole('textbox')).not.toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Send' }));
    expect(await screen.findByText(/3 pushes dispatched/)).toBeInTheDocument();
    expect(await operationPosts(requests)[0]?.json()).toEqual({});
  });

  it('refreshes History after a send, sent or refused: the new calls are listed without a reload', async () => {
    // The server's history: one old call, then each send's call on top.
    let history = [
      callSummary({ id: 41, operation: 'AuthCode', params: { code: '***', phone: '+447911000041' } }),
    ];
    server.use(
      http.get('/api/calls', () => HttpResponse.json(callList(history))),
      http.post('/api/operations/pushNoti', () => {
        history = [
          callSummary({ id: 42, operation: 'pushNoti', binding: 'console', params: {} }),
          ...history,
        ];
        return HttpResponse.json(operationResult({ id: 42 }));
      }),
      http.post('/api/operations/AuthCode', () => {
        const detail = "Invalid phone: '123' is not a valid phone number.";
        history = [
          callSummary({ id: 43, binding: 'console', outcome: 'client-error', status: 400, error: detail }),
          ...history,
        ];
        return problemJson(problem(400, detail, { callId: 43 }));
      }),
    );
    const { user } = renderApp('/history');
    const menu = async (name: string) =>
      user.click(within(await screen.findByRole('navigation', { name: 'Main' })).getByRole('link', { name }));
    const listed = async () =>
      within(await screen.findByRole('table', { name: 'Calls, newest first' }))
        .getAllByRole('link', { name: /^Call \d+,/ })
        .map((a) => Number(/^Call (\d+),/.exec(a.textContent ?? '')?.[1]));
    expect(await listed()).toEqual([41]);

    // To Send through the menu (the cached history is kept, and fresh for 30 s), send, and back.
    await menu('Send');
    const operations = await screen.findByRole('navigation', { name: 'Operations' });
    await user.click(within(operations).getByRole('link', { name: 'Send waiting pushes now pushNoti' }));
    await user.click(await screen.findByRole('button', { name: 'Send' }));
    expect(await screen.findByRole('link', { name: 'View call #42 in History' })).toBeInTheDocument();
    await menu('History');
    await waitFor(async () => expect(await listed()).toEqual([42, 41]));

    // A refused call is recorded too: History shows it as well.
    await menu('Send');
    await user.click(
      within(await screen.findByRole('navigation', { name: 'Operations' })).getByRole('link', {
        name: 'Send a login code AuthCode',
      }),
    );
    await user.type(await screen.findByLabelText(CODE), '4821');
    // Valid for the form, refused by the server.
    await user.type(screen.getByLabelText(PHONE), '+447911123456');
    await user.click(screen.getByRole('button', { name: 'Send' }));
    expect(await screen.findByRole('link', { name: 'View call #43 in History' })).toBeInTheDocument();
    await menu('History');
    await waitFor(async () => expect(await listed()).toEqual([43, 42, 41]));
  });

  it('shows the exact SOAP and HTTP requests for the values typed, copyable as curl', async () => {
    const { user } = renderApp('/send/AuthCode');
    await user.type(await screen.findByLabelText(CODE), '4821');
    await user.type(screen.getByLabelText(PHONE), '+447911123456');

    const soap11 = await screen.findByRole('tab', { name: 'SOAP 1.1' });
    expect(soap11).toHaveAttribute('aria-selected', 'true');
    const request = () => within(screen.getByRole('figure', { name: 'Request' })).getByText(/HTTP\/1\.1/);
    expect(request()).toHaveTextContent('POST /AuthCodeSending.asmx HTTP/1.1');
    expect(request()).toHaveTextContent('Host: school-gateway.example:3000');
    expect(request()).toHaveTextContent('SOAPAction: "http://tempuri.org/AuthCode"');
    expect(request().textContent).toContain('<code>4821</code>');
    expect(request().textContent).toContain('<phone>+447911123456</phone>');

    // Arrow keys move between bindings, as tabs do.
    soap11.focus();
    await user.keyboard('{ArrowRight}{ArrowRight}');
    expect(screen.getByRole('tab', { name: 'HTTP GET' })).toHaveAttribute('aria-selected', 'true');
    expect(request().textContent).toBe(
      'GET /AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456 HTTP/1.1\nHost: school-gateway.example:3000',
    );
    const curl = within(screen.getByRole('figure', { name: 'curl' })).getByText(/^curl -i/);
    expect(curl.textContent).toBe(
      "curl -i 'http://school-gateway.example:3000/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456'",
    );

    await user.click(screen.getByRole('button', { name: 'Copy curl command' }));
    expect(await navigator.clipboard.readText()).toBe(curl.textContent);
    expect(screen.getByText('Copied.')).toBeInTheDocument();
  });

  it('accepts a national number exactly when the server has a default phone region', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/service', () => HttpResponse.json({ ...serviceInfo, defaultPhoneRegion: 'GB' })),
      http.post('/api/operations/AuthCode', () =>
        HttpResponse.json(operationResult({ id: 46, queued: 1, message: 'SMS queued to +447400123456.' })),
      ),
    );
    const { user } = renderApp('/send/AuthCode');
    // The region comes from GET /api/service; the field says how national numbers are read.
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
        /A national number is read as a number of GB\./,
      ),
    );
    await user.type(screen.getByLabelText(CODE), '4821');
    await user.type(screen.getByLabelText(PHONE), '07400 123456');
    await user.click(screen.getByRole('button', { name: 'Send' }));

    expect(await screen.findByText('SMS queued to +447400123456.')).toBeInTheDocument();
    expect(screen.queryByText(/not a valid phone number/)).not.toBeInTheDocument();
    expect(await operationPosts(requests)[0]?.json()).toEqual({ code: '4821', phone: '07400 123456' });
  });

  it('refuses the same national number when no region is configured', async () => {
    const requests = recordRequests();
    const { user } = renderApp('/send/AuthCode');
    await screen.findByRole('tab', { name: 'SOAP 1.1' }); // the service info has arrived
    await user.type(screen.getByLabelText(CODE), '4821');
    await user.type(screen.getByLabelText(PHONE), '07911 123456');
    await user.click(screen.getByRole('button', { name: 'Send' }));
    expect(
      await screen.findByText(
        /^'07911 123456' is not a valid phone number\. Write it with \+ and the country code/,
      ),
    ).toBeInTheDocument();
    expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
      /^The phone number, in international format \(\+ and country code\)\. '07911 123456' is not a valid/,
    );
    expect(operationPosts(requests)).toHaveLength(0);
  });

  it("offers a national number in international form, read in the browser's region, to take with one click", async () => {
    const language = vi.spyOn(navigator, 'language', 'get').mockReturnValue('en-GB');
    try {
      const requests = recordRequests();
      server.use(
        http.post('/api/operations/AuthCode', () =>
          HttpResponse.json(operationResult({ id: 47, queued: 1, message: 'SMS queued to +447911123456.' })),
        ),
      );
      const { user } = renderApp('/send/AuthCode');
      await screen.findByRole('tab', { name: 'SOAP 1.1' }); // the service info has arrived: no region
      await user.type(screen.getByLabelText(CODE), '4821');
      await user.type(screen.getByLabelText(PHONE), '07911 123456');
      await user.click(screen.getByRole('button', { name: '+44 7911 123456' }));
      expect(screen.getByLabelText(PHONE)).toHaveValue('+447911123456');
      await user.click(screen.getByRole('button', { name: 'Send' }));
      expect(await screen.findByText('SMS queued to +447911123456.')).toBeInTheDocument();
      expect(await operationPosts(requests)[0]?.json()).toEqual({ code: '4821', phone: '+447911123456' });
    } finally {
      language.mockRestore();
    }
  });

  it('fills in the example phone, which the server sends codes to, and sends it as filled', async () => {
    const requests = recordRequests();
    server.use(
      http.post('/api/operations/AuthCode', () =>
        HttpResponse.json(operationResult({ id: 48, queued: 1, message: `SMS queued to ${EXAMPLE_PHONE}.` })),
      ),
    );
    const { user } = renderApp('/send/AuthCode');
    await screen.findByRole('tab', { name: 'SOAP 1.1' }); // the service info has arrived
    expect(screen.getByLabelText(PHONE)).toHaveAttribute('placeholder', `e.g. ${EXAMPLE_PHONE}`);
    await user.click(screen.getByRole('button', { name: 'Fill with examples' }));
    expect(screen.getByLabelText(PHONE)).toHaveValue(EXAMPLE_PHONE);
    expect(EXAMPLE_PHONE).toBe('+447400123456'); // a GB mobile: not Guernsey's +447911123456
    await user.click(screen.getByRole('button', { name: 'Send' }));
    expect(await screen.findByText(`SMS queued to ${EXAMPLE_PHONE}.`)).toBeInTheDocument();
    expect(await operationPosts(requests)[0]?.json()).toEqual({ code: '482913', phone: EXAMPLE_PHONE });
  });

  it('shows and fills in a mobile of the region national numbers are read in', async () => {
    server.use(phoneSettings('FR', ['FR']));
    const { user } = renderApp('/send/AuthCode');
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAttribute('placeholder', 'e.g. +33612345678'),
    );
    expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
      'The phone number, in international format (+ and country code). A national number is read as a number of FR.',
    );
    await user.click(screen.getByRole('button', { name: 'Fill with examples' }));
    expect(screen.getByLabelText(PHONE)).toHaveValue('+33612345678');
    expect(screen.getByLabelText(PHONE)).not.toHaveAttribute('aria-invalid');
  });

  it('says which territories share the calling code, and that codes go to them only if SMS_ALLOWED_COUNTRIES lists them', async () => {
    server.use(phoneSettings('GB', ['GB']));
    const view = renderApp('/send/AuthCode');
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
        'The phone number, in international format (+ and country code). A national number is read as a number of GB. ' +
          'Numbers of Guernsey, the Isle of Man and Jersey share +44: codes go to them only if SMS_ALLOWED_COUNTRIES lists them.',
      ),
    );
    view.unmount();

    // Listed: no word of them; Jersey left out: only Jersey is named.
    server.use(phoneSettings('GB', ['GB', 'GG', 'JE', 'IM']));
    const listed = renderApp('/send/AuthCode');
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
        'The phone number, in international format (+ and country code). A national number is read as a number of GB.',
      ),
    );
    listed.unmount();
    server.use(phoneSettings('GB', ['GB', 'GG', 'IM']));
    const noJersey = renderApp('/send/AuthCode');
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
        /GB\. Numbers of Jersey share \+44: codes go to them only if SMS_ALLOWED_COUNTRIES lists them\.$/,
      ),
    );
    noJersey.unmount();

    // +1 is shared by 25 countries and territories: counted, not named.
    server.use(phoneSettings('US', ['US']));
    renderApp('/send/AuthCode');
    await waitFor(() =>
      expect(screen.getByLabelText(PHONE)).toHaveAccessibleDescription(
        /US\. Numbers of 24 other countries and territories share \+1: codes go to them only if SMS_ALLOWED_COUNTRIES lists them\.$/,
      ),
    );
    expect(screen.getByLabelText(PHONE)).toHaveAttribute('placeholder', 'e.g. +12015550123');
  });
});
