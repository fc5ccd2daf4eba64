import { screen, waitFor, within } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { BASE_URL, book, problem } from '../../../testing/data';
import { renderApp } from '../../../testing/render';
import { problemJson, recordRequests, server } from '../../../testing/server';

const PDF_TEXT = '%PDF-1.7\n%âãÏÓ\n1 0 obj <<>> endobj\n%%EOF\n';
const pdf = (name = 'maths-7B.pdf', text = PDF_TEXT) => new File([text], name, { type: 'application/pdf' });

const puts = (requests: Request[]) => requests.filter((r) => r.method === 'PUT');

describe('Books', () => {
  it('lists each book with its file, size, an Open link and the GET-binding URL to copy', async () => {
    server.use(http.get('/api/books', () => HttpResponse.json([book()])));
    const { user } = renderApp('/books');
    // The first test loads the page's code (lazily): it may take a while on a busy machine.
    const table = await screen.findByRole('table', { name: 'Books' }, { timeout: 5000 });
    expect(
      within(table)
        .getAllByRole('columnheader')
        .map((th) => th.textContent),
    ).toEqual(['Term', 'Class', 'File', 'Size', 'Uploaded', 'Link for apps', 'Actions']);
    const [, row] = within(table).getAllByRole('row');
    if (!row) throw new Error('no row');
    const cells = within(row).getAllByRole('cell');
    expect(cells[0]).toHaveTextContent('2026-1');
    expect(cells[1]).toHaveTextContent('7B');
    expect(cells[2]).toHaveTextContent('maths-7B.pdf');
    expect(cells[3]).toHaveTextContent('2.3 MB');
    const url = `${BASE_URL}/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B`;
    expect(cells[5]).toHaveTextContent(url);
    expect(within(row).getByRole('link', { name: 'Open the book of term 2026-1, class 7B' })).toHaveAttribute(
      'href',
      '/api/books/3/file',
    );
    await user.click(within(row).getByRole('button', { name: 'Copy URL' }));
    expect(await navigator.clipboard.readText()).toBe(url);
  });

  it('says when the library is empty', async () => {
    server.use(http.get('/api/books', () => HttpResponse.json([])));
    renderApp('/books');
    expect(await screen.findByText('No books uploaded yet.')).toBeInTheDocument();
  });

  it('uploads the PDF as the body of a PUT, with a progress bar while it travels', async () => {
    const requests = recordRequests();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let books = [] as ReturnType<typeof book>[];
    server.use(
      http.get('/api/books', () => HttpResponse.json(books)),
      http.put('/api/books/:termId/:classId', async () => {
        await gate;
        books = [book({ id: 4, termId: '2026-1', classId: '7 B' })];
        return HttpResponse.json(books[0]);
      }),
    );
    const { user } = renderApp('/books');
    await screen.findByText('No books uploaded yet.');
    const file = pdf();
    await user.type(screen.getByLabelText('Term (termId)'), '2026-1');
    await user.type(screen.getByLabelText('Class (classId)'), '7 B');
    await user.upload(screen.getByLabelText('PDF file'), file);
    await user.click(screen.getByRole('button', { name: 'Upload' }));

    const progress = await screen.findByRole('progressbar', { name: 'Upload progress' });
    expect(progress).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Uploading…' })).toBeDisabled();
    release();

    expect(await screen.findByText('Uploaded maths-7B.pdf for term 2026-1, class 7 B.')).toBeInTheDocument();
    expect(screen.queryByRole('progressbar')).not.toBeInTheDocument();
    expect(await screen.findByRole('table', { name: 'Books' })).toHaveTextContent('7 B');
    expect(screen.getByLabelText('Term (termId)')).toHaveValue('');

    const [put] = puts(requests);
    if (!put) throw new Error('no PUT');
    const url = new URL(put.url);
    expect(url.pathname).toBe('/api/books/2026-1/7%20B');
    expect(url.search).toBe('?filename=maths-7B.pdf');
    expect(put.headers.get('content-type')).toBe('application/pdf');
    // The file itself, byte for byte, not a form or JSON around it.
    const body = new Uint8Array(await put.arrayBuffer());
    expect(body.byteLength).toBe(file.size);
    expect(new TextDecoder().decode(body)).toBe(PDF_TEXT);
  });

  it("shows the server's 415 when the file is not a PDF", async () => {
    const detail = 'The file is not a PDF (it does not start with %PDF-).';
    server.use(
      http.get('/api/books', () => HttpResponse.json([])),
      http.put('/api/books/:termId/:classId', () => problemJson(problem(415, detail))),
    );
    const { user } = renderApp('/books');
    await user.type(await screen.findByLabelText('Term (termId)'), '2026-1');
    await user.type(screen.getByLabelText('Class (classId)'), '7B');
    await user.upload(screen.getByLabelText('PDF file'), pdf('scan.pdf', 'GIF89a not a pdf'));
    await user.click(screen.getByRole('button', { name: 'Upload' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(`Not uploaded: ${detail} (HTTP 415)`);
    expect(screen.queryByRole('progressbar')).not.toBeInTheDocument();
  });

  it("shows the server's 413 when the file is too large", async () => {
    const detail = 'The file is larger than the limit of 52428800 bytes.';
    server.use(
      http.get('/api/books', () => HttpResponse.json([])),
      http.put('/api/books/:termId/:classId', () => problemJson(problem(413, detail))),
    );
    const { user } = renderApp('/books');
    await user.type(await screen.findByLabelText('Term (termId)'), '2026-1');
    await user.type(screen.getByLabelText('Class (classId)'), '7B');
    await user.upload(screen.getByLabelText('PDF file'), pdf());
    await user.click(screen.getByRole('button', { name: 'Upload' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(`Not uploaded: ${detail} (HTTP 413)`);
  });

  it('asks for a term, a class and a file before sending anything', async () => {
    const requests = recordRequests();
    server.use(http.get('/api/books', () => HttpResponse.json([])));
    const { user } = renderApp('/books');
    await user.click(await screen.findByRole('button', { name: 'Upload' }));
    expect(await screen.findByText('Give the term (termId).')).toBeInTheDocument();
    expect(screen.getByLabelText('Class (classId)')).toHaveAccessibleDescription(
      /Give the class \(classId\)\./,
    );
    expect(screen.getByLabelText('PDF file')).toHaveAccessibleDescription('Choose a PDF file.');
    expect(screen.getByLabelText('PDF file')).toHaveAttribute('accept', 'application/pdf,.pdf');
    expect(puts(requests)).toHaveLength(0);
  });

  it('replaces the book of the same term and class', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/books', () => HttpResponse.json([book()])),
      http.put('/api/books/:termId/:classId', () => HttpResponse.json(book({ filename: 'maths-7B-v2.pdf' }))),
    );
    const { user } = renderApp('/books');
    await user.click(
      await screen.findByRole('button', { name: 'Replace the book of term 2026-1, class 7B' }),
    );
    const form = screen.getByRole('form', { name: 'Replace the book of term 2026-1, class 7B' });
    expect(within(form).getByLabelText('Term (termId)')).toHaveValue('2026-1');
    expect(within(form).getByLabelText('Term (termId)')).toHaveAttribute('readonly');
    expect(within(form).getByLabelText('PDF file')).toHaveFocus();
    await user.upload(within(form).getByLabelText('PDF file'), pdf('maths-7B-v2.pdf'));
    await user.click(within(form).getByRole('button', { name: 'Replace' }));
    expect(
      await screen.findByText('Replaced maths-7B-v2.pdf for term 2026-1, class 7B.'),
    ).toBeInTheDocument();
    expect(new URL(puts(requests)[0]?.url ?? '').pathname).toBe('/api/books/2026-1/7B');
    expect(screen.getByRole('heading', { name: 'Upload a book' })).toBeInTheDocument();
  });

  it('asks before deleting a book, and Cancel keeps it', async () => {
    const requests = recordRequests();
    server.use(
      http.get('/api/books', () => HttpResponse.json([book()])),
      http.delete('/api/books/3', () => new HttpResponse(null, { status: 204 })),
    );
    const { user } = renderApp('/books');
    const remove = await screen.findByRole('button', { name: 'Delete the book of term 2026-1, class 7B' });
    await user.click(remove);
    const question = screen.getByRole('group', {
      name: 'Delete the book of term 2026-1, class 7B? Apps asking for it will get “no book”.',
    });
    expect(within(question).getByRole('button', { name: 'Yes, delete' })).toHaveFocus();
    expect(requests.filter((r) => r.method === 'DELETE')).toHaveLength(0);

    await user.click(within(question).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('group')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Delete the book of term 2026-1, class 7B' })).toHaveFocus();
    expect(requests.filter((r) => r.method === 'DELETE')).toHaveLength(0);

    await user.click(screen.getByRole('button', { name: 'Delete the book of term 2026-1, class 7B' }));
    await user.click(screen.getByRole('button', { name: 'Yes, delete' }));
    await waitFor(() =>
      expect(requests.filter((r) => r.method === 'DELETE').map((r) => new URL(r.url).pathname)).toEqual([
        '/api/books/3',
      ]),
    );
  });
});
