import type { MissingTemplate } from '@school/contract';
import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { beforeEach, describe, expect, it } from 'vitest';
import { problem, template } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const templates = [
  template({
    id: 2,
    type: 'marks',
    title: 'New marks',
    body: 'New marks have been published for class {id_class}.',
  }),
  template(),
  template({ id: 3, type: 'homework', title: 'Homework', body: 'New homework ({id}) at {school}.' }),
];
const writes = (requests: Request[]) => requests.filter((r) => r.method !== 'GET');
const TYPE = 'Notification type';
/** GET /api/templates/missing with these types. */
const missing = (types: MissingTemplate[] = [], more = 0) =>
  http.get('/api/templates/missing', () =>
    HttpResponse.json({
      since: new Date(Date.now() - 30 * 86_400_000).toISOString(),
      limit: 5000,
      scanned: 120,
      limited: false,
      types,
      more,
    }),
  );
const rowOf = (type: string) => {
  const table = screen.getByRole('table', { name: 'Templates by notification type' });
  const row = within(table)
    .getByRole('rowheader', { name: new RegExp(`^${type.replace('*', '\\*')}`) })
    .closest('tr');
  if (!row) throw new Error(`no ${type} row`);
  return row;
};

describe('Templates', () => {
  beforeEach(() => {
    server.use(missing());
  });

  it('never offers to delete or retype the generic template, and says why', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/templates', () => HttpResponse.json(templates)));
    const { user } = renderApp('/templates');
    await screen.findByRole('table');
    const table = screen.getByRole('table', { name: 'Templates by notification type' });
    // The generic one first.
    expect(
      within(table)
        .getAllByRole('rowheader')
        .map((th) => th.querySelector('code')?.textContent),
    ).toEqual(['*', 'homework', 'marks']);
    const generic = rowOf('*');
    expect(within(generic).queryByRole('button', { name: /Delete/ })).not.toBeInTheDocument();
    expect(generic).toHaveTextContent(
      'Cannot be deleted: it is the fallback for every type without a template.',
    );
    expect(
      within(rowOf('homework')).getByRole('button', { name: 'Delete the homework template' }),
    ).toBeInTheDocument();

    await user.click(within(generic).getByRole('button', { name: 'Edit the generic template' }));
    const form = screen.getByRole('form', { name: 'Edit the generic template (*)' });
    const type = within(form).getByLabelText(TYPE);
    expect(type).toHaveValue('*');
    expect(type).toHaveAttribute('readonly');
    expect(type).toHaveAccessibleDescription(/The generic template keeps its type \(\*\)/);
    await user.type(type, 'x');
    expect(type).toHaveValue('*');
    expect(writes(requests)).toHaveLength(0);
  });

  it('previews the push with example values filled in, as the server fills them', async () => {
    server.use(http.get('/api/templates', () => HttpResponse.json(templates)));
    const { user } = renderApp('/templates');
    const form = await screen.findByRole('form', { name: 'Add a template' });
    const placeholders = within(form).getByRole('region', { name: 'Placeholders' });
    for (const name of ['{type}', '{id}', '{id_class}', '{baseUrlSchool}', '{school}']) {
      expect(within(placeholders).getByText(name)).toBeInTheDocument();
    }

    await user.type(within(form).getByLabelText(TYPE), 'homework');
    await user.type(within(form).getByLabelText('Title'), 'New {{type}');
    await user.type(
      within(form).getByLabelText('Body'),
      'Item {{id} at {{school} ({{baseUrlSchool}), class {{id_class}, {{unknown}',
    );
    const preview = within(form).getByRole('region', { name: 'Preview' });
    expect(within(preview).getByText('New homework')).toBeInTheDocument();
    // Flagged as typed: the server would refuse it.
    expect(within(form).getByLabelText('Body')).toHaveAccessibleDescription(
      /Unknown placeholder \{unknown\}: it would be sent as written\. Use \{type\}, \{id\}, \{id_class\}, \{baseUrlSchool\} and \{school\}\./,
    );
    expect(within(form).getByLabelText('Title')).not.toHaveAttribute('aria-invalid');
    // id_class is only sent with marks: it stays as written, as an unknown name does.
    expect(
      within(preview).getByText(
        'Item 1201 at Example School (https://school.example.org/), class {id_class}, {unknown}',
      ),
    ).toBeInTheDocument();

    await user.clear(within(form).getByLabelText(TYPE));
    await user.type(within(form).getByLabelText(TYPE), 'marks');
    expect(
      within(preview).getByText(
        'Item 88 at Example School (https://school.example.org/), class 7B, {unknown}',
      ),
    ).toBeInTheDocument();
  });

  it('adds a template with the JSON the API takes, and shows a 409', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/templates', () => HttpResponse.json(templates)),
      http.post('/api/templates', () =>
        problemJson(
          problem(
            409,
            'The homework template already answers Homework: types match whatever their case and surrounding spaces. Edit that one.',
            {
              errors: {
                type: 'The homework template already answers Homework: types match whatever their case and surrounding spaces. Edit that one.',
              },
            },
          ),
        ),
      ),
    );
    const { user } = renderApp('/templates');
    const form = await screen.findByRole('form', { name: 'Add a template' });
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await within(form).findByText('Give the notification type.')).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);

    await user.type(within(form).getByLabelText(TYPE), 'home work');
    await user.type(within(form).getByLabelText('Title'), 'Homework');
    await user.type(within(form).getByLabelText('Body'), 'New homework at {{school}.');
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await within(form).findByText('A type has no spaces.')).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);

    await user.clear(within(form).getByLabelText(TYPE));
    await user.type(within(form).getByLabelText(TYPE), 'Homework');
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Not added: The homework template already answers Homework: types match whatever their case and surrounding spaces. Edit that one. (HTTP 409)',
    );
    expect(within(form).getByLabelText(TYPE)).toHaveAttribute('aria-invalid', 'true');
    expect(await writes(requests)[0]?.json()).toEqual({
      type: 'Homework',
      title: 'Homework',
      body: 'New homework at {school}.',
    });
  });

  it('says how types match their templates', async () => {
    server.use(http.get('/api/templates', () => HttpResponse.json(templates)));
    renderApp('/templates');
    await screen.findByRole('table', { name: 'Templates by notification type' });
    expect(
      screen.getByText(
        'A notification type matches its template whatever its case and the spaces around it: Homework, HOMEWORK and " homework " all get the homework template.',
      ),
    ).toBeInTheDocument();
  });

  it('lists the types received without a template, and starts one from the generic wording', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/templates', () => HttpResponse.json(templates)),
      missing(
        [
          {
            type: 'sports',
            spellings: ['Sports', ' sports'],
            count: 1234,
            lastSeenAt: '2026-11-20T10:00:00.000Z',
          },
          { type: 'home work', spellings: ['home work'], count: 2, lastSeenAt: '2026-11-19T10:00:00.000Z' },
        ],
        3,
      ),
      http.post('/api/templates', async ({ request }) =>
        HttpResponse.json(template({ id: 9, ...((await request.json()) as object) }), { status: 201 }),
      ),
    );
    const { user } = renderApp('/templates');
    const list = await screen.findByRole('table', { name: 'Notification types received without a template' });
    expect(
      screen.getByText(/From the successful SendNotificationType calls of the last 30 days:/),
    ).toBeInTheDocument();
    const [, sports, spaced] = within(list).getAllByRole('row');
    if (!sports || !spaced) throw new Error('missing rows');
    expect(within(sports).getByRole('rowheader')).toHaveTextContent('sports');
    expect(within(sports).getByRole('rowheader')).toHaveTextContent('sent as Sports, sports');
    expect(sports).toHaveTextContent('1,234');
    expect(within(sports).getByRole('time')).toHaveAttribute('datetime', '2026-11-20T10:00:00.000Z');
    // A type with a space cannot have a template: no action, and why.
    expect(within(spaced).queryByRole('button')).not.toBeInTheDocument();
    expect(spaced).toHaveTextContent('No template possible: A type has no spaces.');
    expect(screen.getByText('And 3 more types, sent less often.')).toBeInTheDocument();

    await user.click(within(sports).getByRole('button', { name: 'Create template for sports' }));
    const form = screen.getByRole('form', { name: 'Add a template' });
    expect(within(form).getByLabelText(TYPE)).toHaveValue('sports');
    expect(within(form).getByLabelText('Title')).toHaveValue('New notification');
    expect(within(form).getByLabelText('Title')).toHaveFocus();
    expect(within(form).getByLabelText('Body')).toHaveValue('There is a new {type} notification for you.');
    await user.clear(within(form).getByLabelText('Title'));
    await user.type(within(form).getByLabelText('Title'), 'Sports day');
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await screen.findByText('Added the sports template.')).toBeInTheDocument();
    expect(await writes(requests)[0]?.json()).toEqual({
      type: 'sports',
      title: 'Sports day',
      body: 'There is a new {type} notification for you.',
    });
  });

  it('says when every type received has a template', async () => {
    server.use(http.get('/api/templates', () => HttpResponse.json(templates)));
    renderApp('/templates');
    expect(await screen.findByText('Every type received has a template of its own.')).toBeInTheDocument();
  });

  it('refuses unknown placeholders before sending, naming the known ones', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/templates', () => HttpResponse.json(templates)));
    const { user } = renderApp('/templates');
    const form = await screen.findByRole('form', { name: 'Add a template' });
    await user.type(within(form).getByLabelText(TYPE), 'trips');
    await user.type(within(form).getByLabelText('Title'), 'Trip at {{School}');
    await user.type(within(form).getByLabelText('Body'), 'Trip {{id}.');
    expect(within(form).getByLabelText('Title')).toHaveAttribute('aria-invalid', 'true');
    expect(
      within(form).getByText(
        'Unknown placeholder {School}: it would be sent as written. Use {type}, {id}, {id_class}, {baseUrlSchool} and {school}. ({School} is written {school}.)',
      ),
    ).toBeInTheDocument();
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(writes(requests)).toHaveLength(0);
    // Put right, the message goes.
    await user.clear(within(form).getByLabelText('Title'));
    await user.type(within(form).getByLabelText('Title'), 'Trip at {{school}');
    expect(within(form).getByLabelText('Title')).not.toHaveAttribute('aria-invalid');
  });

  it('marks a template that differs from an older one only by case as not used', async () => {
    server.use(
      http.get('/api/templates', () =>
        HttpResponse.json([...templates, template({ id: 7, type: 'Homework', title: 'Old', body: 'Old.' })]),
      ),
    );
    renderApp('/templates');
    await screen.findByRole('table', { name: 'Templates by notification type' });
    expect(rowOf('Homework')).toHaveTextContent(
      'Not used: the homework template answers this type (types match whatever their case). Delete this one, or give it another type.',
    );
    expect(rowOf('homework')).not.toHaveTextContent('Not used');
  });

  it('asks before deleting a template', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/templates', () => HttpResponse.json(templates)),
      http.delete('/api/templates/3', () => new HttpResponse(null, { status: 204 })),
    );
    const { user } = renderApp('/templates');
    await screen.findByRole('table');
    await user.click(within(rowOf('homework')).getByRole('button', { name: 'Delete the homework template' }));
    expect(
      screen.getByRole('group', {
        name: 'Delete the homework template? homework notifications will then use the generic template.',
      }),
    ).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);
    await user.click(screen.getByRole('button', { name: 'Yes, delete' }));
    await waitFor(() =>
      expect(writes(requests).map((r) => new URL(r.url).pathname)).toEqual(['/api/templates/3']),
    );
  });
});
