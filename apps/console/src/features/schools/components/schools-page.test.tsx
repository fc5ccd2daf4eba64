import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { problem, school } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const writes = (requests: Request[]) => requests.filter((r) => r.method !== 'GET');
const BASE_URL = 'Base URL';
const TOPIC_KEY = 'Topic key';
const ALLOWED = 'Allowed callers (allowedIps)';

describe('Schools', () => {
  it('lists the schools with their push topics and allowed callers', async () => {
    server.use(
      http.get('/api/schools', () =>
        HttpResponse.json([
          school(),
          school({
            id: 2,
            name: 'Riverside',
            topicKey: 'riverside',
            topic: 'school-riverside',
            baseUrl: 'https://riverside.example.org',
            allowedIps: [],
          }),
        ]),
      ),
    );
    renderApp('/schools');
    const table = await screen.findByRole('table', { name: 'Registered schools' });
    const [, northfield, riverside] = within(table).getAllByRole('row');
    if (!northfield || !riverside) throw new Error('missing rows');
    expect(northfield).toHaveTextContent('Northfield Academy');
    expect(northfield).toHaveTextContent('https://northfield.example.org');
    expect(within(northfield).getByText('school-northfield')).toBeInTheDocument();
    expect(northfield).toHaveTextContent('203.0.113.0/24');
    expect(within(riverside).getByText('school-riverside')).toBeInTheDocument();
    // Both topics in full, the class named as SendMarkNotes and templates name it.
    expect(within(riverside).getByText('school-riverside-class-{id_class}')).toBeInTheDocument();
    expect(riverside).toHaveTextContent('any');
  });

  it('shows the contract’s messages before any request: bad URL, bad topic key, bad IP', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/schools', () => HttpResponse.json([])));
    const { user } = renderApp('/schools');
    await screen.findByText(/No schools registered yet/);
    await user.type(screen.getByLabelText('Name'), 'Northfield Academy');
    await user.type(screen.getByLabelText(BASE_URL), 'northfield.example.org');
    await user.type(screen.getByLabelText(TOPIC_KEY), 'north field!');
    await user.type(screen.getByLabelText(ALLOWED), '203.0.113.0/24\n10.0.0.300');
    await user.click(screen.getByRole('button', { name: 'Add school' }));

    expect(await screen.findByText(/Enter the http\(s\) URL the school calls with/)).toBeInTheDocument();
    expect(screen.getByLabelText(BASE_URL)).toHaveAttribute('aria-invalid', 'true');
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveAccessibleDescription(
      /Use 1 to 64 letters, digits, - or _ \(it names the push topic\)\./,
    );
    expect(screen.getByLabelText(ALLOWED)).toHaveAccessibleDescription(
      /“10\.0\.0\.300”: Not an IP address or CIDR range \(e\.g\. 203\.0\.113\.0\/24\)\./,
    );
    expect(screen.getByLabelText(ALLOWED)).toHaveAttribute('aria-invalid', 'true');
    expect(screen.getByLabelText('Name')).not.toHaveAttribute('aria-invalid');
    expect(writes(requests)).toHaveLength(0);
  });

  it('names every refused allowed caller, not only the first', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/schools', () => HttpResponse.json([])));
    const { user } = renderApp('/schools');
    await screen.findByText(/No schools registered yet/);
    await user.type(screen.getByLabelText('Name'), 'Northfield Academy');
    await user.type(screen.getByLabelText(BASE_URL), 'https://northfield.example.org');
    await user.type(screen.getByLabelText(TOPIC_KEY), 'northfield');
    await user.type(screen.getByLabelText(ALLOWED), '10.0.0.300\n203.0.113.0/24\nschool wifi\n1.2.3.4/99');
    await user.click(screen.getByRole('button', { name: 'Add school' }));
    expect(
      await screen.findByText(
        '“10.0.0.300”, “school wifi” and “1.2.3.4/99”: Not an IP address or CIDR range (e.g. 203.0.113.0/24).',
      ),
    ).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);
  });

  it('starts a school from the base URL a link gives (the Send page after an unknown school)', async () => {
    server.use(http.get('/api/schools', () => HttpResponse.json([school()])));
    renderApp('/schools?baseUrl=https%3A%2F%2Funknown.example.org%2F');
    const form = await screen.findByRole('form', { name: 'Add a school' });
    expect(within(form).getByLabelText(BASE_URL)).toHaveValue('https://unknown.example.org/');
    await waitFor(() => expect(within(form).getByLabelText('Name')).toHaveFocus());
  });

  it('adds a school: the JSON the API takes, allowed IPs one per line', async () => {
    const requests = recordRequests();
    let schools: ReturnType<typeof school>[] = [];
    server.use(
      http.get('/api/schools', () => HttpResponse.json(schools)),
      http.post('/api/schools', async ({ request }) => {
        const body = (await request.json()) as { name: string };
        schools = [school({ name: body.name })];
        return HttpResponse.json(schools[0], { status: 201 });
      }),
    );
    const { user } = renderApp('/schools');
    await screen.findByText(/No schools registered yet/);
    await user.type(screen.getByLabelText('Name'), '  Northfield Académy ');
    // The topic key follows the name until typed by hand.
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveValue('northfield-academy');
    await user.clear(screen.getByLabelText('Name'));
    await user.type(screen.getByLabelText('Name'), '  Northfield Academy ');
    await user.type(screen.getByLabelText(BASE_URL), 'https://northfield.example.org/');
    await user.clear(screen.getByLabelText(TOPIC_KEY));
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveValue('');
    await user.type(screen.getByLabelText(TOPIC_KEY), 'n');
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveValue('n');
    await user.type(screen.getByLabelText(TOPIC_KEY), 'orthfield');
    await user.type(screen.getByLabelText('Name'), 'x');
    await user.type(screen.getByLabelText('Name'), '{Backspace}');
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveValue('northfield');
    await user.type(screen.getByLabelText(ALLOWED), ' 203.0.113.0/24\n\n2001:db8::/32 \n');
    await user.click(screen.getByRole('button', { name: 'Add school' }));

    expect(
      await screen.findByText('Added Northfield Academy (topic school-northfield).'),
    ).toBeInTheDocument();
    const [post] = writes(requests);
    expect(post?.method).toBe('POST');
    expect(new URL(post?.url ?? '').pathname).toBe('/api/schools');
    expect(post?.headers.get('content-type')).toBe('application/json');
    expect(await post?.json()).toEqual({
      name: 'Northfield Academy',
      baseUrl: 'https://northfield.example.org/',
      topicKey: 'northfield',
      allowedIps: ['203.0.113.0/24', '2001:db8::/32'],
    });
    expect(await screen.findByRole('table', { name: 'Registered schools' })).toHaveTextContent(
      'Northfield Academy',
    );
    expect(screen.getByLabelText('Name')).toHaveValue('');
  });

  it('keeps a new school half typed while staff look at another page', async () => {
    const { user } = renderApp('/schools');
    await screen.findByText(/No schools registered yet/);
    await user.type(screen.getByLabelText('Name'), 'Riverside School');
    await user.type(screen.getByLabelText(BASE_URL), 'https://riverside.example.org/');
    await user.click(screen.getByRole('link', { name: 'History' }));
    await screen.findByRole('heading', { name: 'History', level: 1 });
    await user.click(screen.getByRole('link', { name: 'Schools' }));
    await waitFor(() => expect(screen.getByLabelText('Name')).toHaveValue('Riverside School'));
    expect(screen.getByLabelText(BASE_URL)).toHaveValue('https://riverside.example.org/');
  });

  it('shows the 409, with the clash under the field that clashed', async () => {
    const detail = 'Northfield Academy already has this topic key (northfield): choose another.';
    server.use(
      http.get('/api/schools', () => HttpResponse.json([school()])),
      http.post('/api/schools', () =>
        problemJson(
          problem(409, detail, {
            errors: { topicKey: 'Northfield Academy already has this topic key: choose another.' },
          }),
        ),
      ),
    );
    const { user } = renderApp('/schools');
    await screen.findByRole('table');
    await user.type(screen.getByLabelText('Name'), 'Northfield again');
    await user.type(screen.getByLabelText(BASE_URL), 'https://northfield.example.org');
    await user.type(screen.getByLabelText(TOPIC_KEY), 'northfield');
    await user.click(screen.getByRole('button', { name: 'Add school' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(`Not added: ${detail} (HTTP 409)`);
    expect(screen.getByLabelText(TOPIC_KEY)).toHaveAccessibleDescription(
      /Northfield Academy already has this topic key: choose another\./,
    );
    expect(screen.getByLabelText(BASE_URL)).not.toHaveAttribute('aria-invalid');
    // What was typed stays, to be corrected.
    expect(screen.getByLabelText('Name')).toHaveValue('Northfield again');
  });

  it('edits a school with a PUT of the whole school', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/schools', () => HttpResponse.json([school()])),
      http.put('/api/schools/1', async ({ request }) =>
        HttpResponse.json(school({ ...((await request.json()) as object) })),
      ),
    );
    const { user } = renderApp('/schools');
    await user.click(await screen.findByRole('button', { name: 'Edit Northfield Academy' }));
    const form = screen.getByRole('form', { name: 'Edit Northfield Academy' });
    expect(within(form).getByLabelText('Name')).toHaveFocus();
    expect(within(form).getByLabelText(ALLOWED)).toHaveValue('203.0.113.0/24');
    await user.clear(within(form).getByLabelText(ALLOWED));
    await user.click(within(form).getByRole('button', { name: 'Save changes' }));

    expect(await screen.findByText('Saved Northfield Academy.')).toBeInTheDocument();
    const [put] = writes(requests);
    expect(put?.method).toBe('PUT');
    expect(await put?.json()).toEqual({
      name: 'Northfield Academy',
      baseUrl: 'https://northfield.example.org',
      topicKey: 'northfield',
      allowedIps: [],
    });
    expect(screen.getByRole('heading', { name: 'Add a school' })).toBeInTheDocument();
  });

  it('asks before removing a school', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/schools', () => HttpResponse.json([school()])),
      http.delete('/api/schools/1', () => new HttpResponse(null, { status: 204 })),
    );
    const { user } = renderApp('/schools');
    await user.click(await screen.findByRole('button', { name: 'Delete Northfield Academy' }));
    expect(writes(requests)).toHaveLength(0);
    await user.click(screen.getByRole('button', { name: 'Yes, remove' }));
    await waitFor(() =>
      expect(writes(requests).map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual([
        'DELETE /api/schools/1',
      ]),
    );
  });
});
