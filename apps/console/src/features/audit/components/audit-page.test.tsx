import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { auditEntry, auditList, operatorSession, session } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { recordRequests, server } from '../../../testing/server';

const auditRequests = (requests: Request[]) =>
  requests.filter((r) => new URL(r.url).pathname === '/api/audit').map((r) => new URL(r.url).searchParams);

describe('Audit', () => {
  it('shows each entry: time, user, IP, action in words, target and what changed', async () => {
    server.use(
      http.get('/api/audit', () =>
        HttpResponse.json(
          auditList([
            auditEntry({
              id: 31,
              action: 'user-update',
              target: 'user 2 (ana)',
              details: { role: { from: 'operator', to: 'admin' }, disabled: { from: true, to: false } },
            }),
            auditEntry({
              id: 30,
              userId: null,
              username: 'nobody',
              ip: '203.0.113.50',
              action: 'login-failed',
              target: null,
              details: { reason: 'unknown user' },
            }),
          ]),
        ),
      ),
    );
    renderApp('/audit');
    const table = await screen.findByRole('table', { name: 'Audit log, newest first' });
    expect(
      within(table)
        .getAllByRole('columnheader')
        .map((th) => th.textContent),
    ).toEqual(['Time', 'User', 'IP address', 'Action', 'Target', 'Details']);
    const [, change, failed] = within(table).getAllByRole('row');
    if (!change || !failed) throw new Error('missing rows');
    const cells = within(change).getAllByRole('cell');
    expect(cells[0]?.querySelector('time')).toHaveAttribute('datetime', '2026-11-20T08:20:00.000Z');
    // People by their display names, the username beside.
    expect(cells[1]).toHaveTextContent('Alex Admin (admin)');
    expect(cells[2]).toHaveTextContent('198.51.100.7');
    expect(cells[3]).toHaveTextContent('Changed a user');
    // A target links to where it is shown.
    expect(within(cells[4] as HTMLElement).getByRole('link', { name: 'user 2 (ana)' })).toHaveAttribute(
      'href',
      '/users',
    );
    expect(
      within(cells[5] as HTMLElement)
        .getAllByRole('listitem')
        .map((li) => li.textContent),
    ).toEqual(['Role: operator → admin', 'Disabled: yes → no']);

    const failedCells = within(failed).getAllByRole('cell');
    expect(failedCells[1]).toHaveTextContent('nobody');
    expect(failedCells[3]).toHaveTextContent('Failed login');
    expect(failedCells[4]).toHaveTextContent('—');
    expect(failedCells[5]).toHaveTextContent('Reason: unknown user');
  });

  it('links a call or a delivery to its page, and keeps a typed name that is no user in the filter', async () => {
    server.use(
      http.get('/api/audit', () =>
        HttpResponse.json(
          auditList([
            auditEntry({ id: 33, action: 'send', target: 'call 42 (AuthCode)', details: null }),
            auditEntry({
              id: 32,
              action: 'delivery-retry',
              target: 'delivery 12 (+447911123456)',
              details: null,
            }),
          ]),
        ),
      ),
    );
    renderApp('/audit?user=nobody');
    expect(await screen.findByRole('link', { name: 'call 42 (AuthCode)' })).toHaveAttribute(
      'href',
      '/history/42',
    );
    expect(screen.getByRole('link', { name: 'delivery 12 (+447911123456)' })).toHaveAttribute(
      'href',
      '/deliveries/12',
    );
    await waitFor(() => expect(screen.getByLabelText('User')).toHaveValue('nobody'));
    expect(screen.getByRole('option', { name: 'nobody (no such user)' })).toBeInTheDocument();
  });

  it('says what a Send was when sent, and links to the call for what came of its SMS since', async () => {
    server.use(
      http.get('/api/audit', () =>
        HttpResponse.json(
          auditList([
            auditEntry({
              id: 35,
              action: 'send',
              target: 'call 42 (AuthCode)',
              details: {
                result: 'Answered · SMS queued',
                status: 200,
                params: { code: '***', phone: '+447911123456' },
              },
            }),
            // Written before the verdict was kept: the wire's outcome, in words.
            auditEntry({
              id: 34,
              action: 'send',
              target: 'call 41 (AuthCode)',
              details: { outcome: 'ok', status: 200 },
            }),
          ]),
        ),
      ),
    );
    renderApp('/audit');
    const rows = (await screen.findAllByRole('row')).slice(1);
    const details = (row: HTMLElement | undefined) =>
      within(within(row as HTMLElement).getAllByRole('cell')[5] as HTMLElement).getAllByRole('listitem');
    const [sent, older] = rows.map(details);
    expect(sent?.[0]).toHaveTextContent('Result when sent: Answered · SMS queued');
    expect(older?.[0]).toHaveTextContent('Result when sent: Answered');
    expect(rows.some((row) => /Outcome: ok/.test(row.textContent ?? ''))).toBe(false);
    expect(screen.getByRole('link', { name: 'Its result now: call 42 (AuthCode)' })).toHaveAttribute(
      'href',
      '/history/42',
    );
  });

  it('shows what changed as text, never as HTML', async () => {
    const hostile = '<img src=x onerror="alert(1)"><b>bold</b>';
    server.use(
      http.get('/api/audit', () =>
        HttpResponse.json(
          auditList([
            auditEntry({
              target: `school 1 (${hostile})`,
              details: { name: { from: 'Northfield', to: hostile } },
            }),
          ]),
        ),
      ),
    );
    const { container } = renderApp('/audit');
    expect(await screen.findByText(`Name: Northfield → ${hostile}`)).toBeInTheDocument();
    expect(screen.getByText(`school 1 (${hostile})`)).toBeInTheDocument();
    expect(container.querySelector('img, b')).toBeNull();
  });

  it('puts the filters in the URL and in the request: user, action, time range', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/audit', () => HttpResponse.json(auditList([auditEntry()]))));
    const { user, location } = renderApp('/audit');
    await screen.findByRole('table');
    expect(auditRequests(requests)[0]?.toString()).toBe('limit=50');

    // A choice in the list applies at once; its options are in words.
    expect(screen.getByRole('option', { name: 'Failed login' })).toHaveValue('login-failed');
    await user.selectOptions(screen.getByLabelText('Action'), 'Changed a school');
    await waitFor(() => expect(location().search).toBe('?action=school-update'));
    await waitFor(() =>
      expect(auditRequests(requests).at(-1)?.toString()).toBe('action=school-update&limit=50'),
    );

    // People are picked by name; the times apply with Apply filters.
    expect(
      within(screen.getByLabelText('User'))
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Anyone', 'Alex Admin (admin)', 'Ana Operator (ana)']);
    await user.selectOptions(screen.getByLabelText('User'), 'Ana Operator (ana)');
    await waitFor(() => expect(location().search).toBe('?user=ana&action=school-update'));
    await user.type(screen.getByLabelText('From'), '2026-11-20T08:00');
    await user.click(screen.getByRole('button', { name: 'Apply filters' }));
    await waitFor(() =>
      expect(location().search).toMatch(/^\?user=ana&action=school-update&from=2026-11-20T/),
    );
    const from = new URLSearchParams(location().search).get('from') ?? '';
    expect(new Date(from).getTime()).toBe(new Date('2026-11-20T08:00').getTime());
    await waitFor(() =>
      expect(Object.fromEntries(auditRequests(requests).at(-1) ?? [])).toEqual({
        user: 'ana',
        action: 'school-update',
        from,
        limit: '50',
      }),
    );

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(location().search).toBe(''));
    expect(screen.getByLabelText('User')).toHaveValue('');
    expect(screen.getByLabelText('Action')).toHaveValue('');
  });

  it('refuses a time range that ends before it starts, without asking', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/audit', () => HttpResponse.json(auditList([auditEntry()]))));
    const { user, location } = renderApp('/audit');
    await screen.findByRole('table');
    await user.type(screen.getByLabelText('From'), '2026-11-20T10:00');
    await user.type(screen.getByLabelText('To'), '2026-11-20T09:00');
    await user.click(screen.getByRole('button', { name: 'Apply filters' }));
    expect(await screen.findByText('“To” must be after “From”.')).toBeInTheDocument();
    expect(location().search).toBe('');
    expect(auditRequests(requests)).toHaveLength(1);
  });

  it('reads the filters from a shared link and drops what the API would refuse', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/audit', () => HttpResponse.json(auditList([]))));
    renderApp('/audit?user=ana&action=hack-the-planet&from=yesterday');
    expect(await screen.findByText('No entries match these filters.')).toBeInTheDocument();
    expect(screen.getByLabelText('User')).toHaveValue('ana');
    expect(screen.getByLabelText('Action')).toHaveValue('');
    expect(auditRequests(requests)[0]?.toString()).toBe('user=ana&limit=50');
  });

  it('loads older entries with the cursor of the previous page', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/audit', ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        return HttpResponse.json(
          cursor === '30'
            ? auditList([auditEntry({ id: 29, target: 'school 2 (Riverside)' })])
            : auditList([auditEntry({ id: 30 })], '30'),
        );
      }),
    );
    const { user } = renderApp('/audit?action=school-update');
    await screen.findByText('school 1 (Northfield Academy)');
    await user.click(screen.getByRole('button', { name: 'Load more' }));
    expect(await screen.findByText('school 2 (Riverside)')).toBeInTheDocument();
    const second = auditRequests(requests)[1];
    expect(second?.get('cursor')).toBe('30');
    expect(second?.get('action')).toBe('school-update');
    expect(screen.queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();
    expect(screen.getByText('All 2 entries are shown.')).toBeInTheDocument();
  });

  it('shows anyone but an admin of every school their own actions, without a user to pick', async () => {
    for (const who of [operatorSession(), session({ schoolIds: [1] })]) {
      const requests = recordRequests();
      server.use(
        http.get('/api/session', () => HttpResponse.json(who)),
        http.get('/api/audit', () =>
          HttpResponse.json(auditList([auditEntry({ userId: who.user.id, username: who.user.username })])),
        ),
      );
      const view = renderApp('/audit');
      const table = await screen.findByRole('table', { name: 'Audit log, newest first' });
      expect(within(table).getAllByRole('row')).toHaveLength(2);
      expect(screen.getByText(/What you did in the console, newest first/)).toBeInTheDocument();
      expect(screen.queryByLabelText('User')).not.toBeInTheDocument();
      expect(screen.getByLabelText('Action')).toBeInTheDocument();
      // The users' list is the admins' of every school: not asked for.
      expect(requests.some((r) => new URL(r.url).pathname === '/api/users')).toBe(false);
      view.unmount();
    }
  });
});
