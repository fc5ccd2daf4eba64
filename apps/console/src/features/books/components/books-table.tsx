import type { Book } from '@school/contract';
import { ConfirmButton } from '../../../components/ui/confirm';
import { CopyButton } from '../../../components/ui/copy-button';
import { ProblemMessage } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { apiPath } from '../../../lib/api-client';
import { formatBytes } from '../../../lib/format';
import { useDeleteBook } from '../api/delete-book';

const what = (book: Book) => `the book of term ${book.termId}, class ${book.classId}`;

export function BooksTable({
  books,
  onReplace,
}: {
  books: readonly Book[];
  onReplace: (book: Book) => void;
}) {
  return (
    <div className="table-wrap">
      <table className="books cards">
        <caption className="visually-hidden">Books</caption>
        <thead>
          <tr>
            <th scope="col">Term</th>
            <th scope="col">Class</th>
            <th scope="col">File</th>
            <th scope="col" className="numeric">
              Size
            </th>
            <th scope="col">Uploaded</th>
            <th scope="col">Link for apps</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {books.map((book) => (
            <BookRow key={book.id} book={book} onReplace={onReplace} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function BookRow({ book, onReplace }: { book: Book; onReplace: (book: Book) => void }) {
  const remove = useDeleteBook();
  return (
    <tr>
      <td data-label="Term">
        <code className="key">{book.termId}</code>
      </td>
      <td data-label="Class">
        <code className="key">{book.classId}</code>
      </td>
      <td data-label="File">{book.filename}</td>
      <td className="numeric" data-label="Size">
        {formatBytes(book.size)}
      </td>
      <td data-label="Uploaded">
        <Timestamp iso={book.uploadedAt} />
      </td>
      <td data-label="Link for apps">
        <code className="endpoint">{book.url}</code> <CopyButton text={book.url} label={`Copy URL`} />
      </td>
      <td className="cell-actions">
        <div className="row-actions">
          <a className="button button-small" href={apiPath(`/books/${book.id}/file`)}>
            Open <span className="visually-hidden">{what(book)}</span>
          </a>
          <button type="button" className="button button-small" onClick={() => onReplace(book)}>
            Replace <span className="visually-hidden">{what(book)}</span>
          </button>
          <ConfirmButton
            question={`Delete ${what(book)}? Apps asking for it will get “no book”.`}
            confirmLabel="Yes, delete"
            pending={remove.isPending}
            onConfirm={() => remove.mutate(book.id)}
          >
            Delete <span className="visually-hidden">{what(book)}</span>
          </ConfirmButton>
        </div>
        {remove.isError ? <ProblemMessage error={remove.error} prefix="Not deleted" /> : null}
      </td>
    </tr>
  );
}
