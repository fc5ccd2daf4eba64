import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
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
const rowOf = (type: string) => {
  const table = screen.getByRole('table', { name: 'Templates by notification type' });
  const row = within(table)
    .getByRole('rowheader', { name: new RegExp(`^${type.replace('*', '\\*')}`) })
    .closest('tr');
  if (!row) throw new Error(`no ${type} row`);
  return row;
};

describe('Templates', () => {
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
    const type = within(form).getByLabelText('type');
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

    await user.type(within(form).getByLabelText('type'), 'homework');
    await user.type(within(form).getByLabelText('title'), 'New {{type}');
    await user.type(
      within(form).getByLabelText('body'),
      'Item {{id} at {{school} ({{baseUrlSchool}), class {{id_class}, {{unknown}',
    );
    const preview = within(form).getByRole('region', { name: 'Preview' });
    expect(within(preview).getByText('New homework')).toBeInTheDocument();
    // id_class is only sent with marks: it stays as written, as an unknown name does.
    expect(
      within(preview).getByText(
        'Item 1201 at Example School (https://school.example.org/), class {id_class}, {unknown}',
      ),
    ).toBeInTheDocument();

    await user.clear(within(form).getByLabelText('type'));
    await user.type(within(form).getByLabelText('type'), 'marks');
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
        problemJson(problem(409, 'There is already a template for that type.')),
      ),
    );
    const { user } = renderApp('/templates');
    const form = await screen.findByRole('form', { name: 'Add a template' });
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await within(form).findByText('Give the notification type.')).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);

    await user.type(within(form).getByLabelText('type'), 'home work');
    await user.type(within(form).getByLabelText('title'), 'Homework');
    await user.type(within(form).getByLabelText('body'), 'New homework at {{school}.');
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await within(form).findByText('A type has no spaces.')).toBeInTheDocument();
    expect(writes(requests)).toHaveLength(0);

    await user.clear(within(form).getByLabelText('type'));
    await user.type(within(form).getByLabelText('type'), 'homework');
    await user.click(within(form).getByRole('button', { name: 'Add template' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'Not added: There is already a template for that type. (HTTP 409)',
    );
    expect(await writes(requests)[0]?.json()).toEqual({
      type: 'homework',
      title: 'Homework',
      body: 'New homework at {school}.',
    });
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
