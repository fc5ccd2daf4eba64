import type { Book } from '@school/contract';
import { useState } from 'react';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { useBooks } from '../api/get-books';
import { BooksTable } from './books-table';
import { UploadForm } from './upload-form';
import '../books.css';

export function BooksPage() {
  const books = useBooks();
  const [replacing, setReplacing] = useState<Book | null>(null);
  const [message, setMessage] = useState('');

  return (
    <div className="page books-page">
      <title>Books · School Messaging</title>
      <h1>Books</h1>
      <p className="hint">
        The term books apps download, one PDF per term and class. An app fetches a book at its link (the
        service's <code>GetBookPdfByTerm</code>).
      </p>

      <UploadForm
        key={replacing?.id ?? 'new'}
        replacing={replacing}
        onUploading={() => setMessage('')}
        onCancel={() => setReplacing(null)}
        onUploaded={(book, replaced) => {
          setReplacing(null);
          setMessage(
            `${replaced ? 'Replaced' : 'Uploaded'} ${book.filename} for term ${book.termId}, class ${book.classId}.`,
          );
        }}
      />
      <p role="status" className="page-status">
        {message}
      </p>

      <h2>Library</h2>
      {books.isPending ? (
        <Loading>Loading books…</Loading>
      ) : books.isError ? (
        <ErrorState error={books.error} title="Could not load the books" onRetry={() => books.refetch()} />
      ) : books.data.length === 0 ? (
        <EmptyState>No books uploaded yet.</EmptyState>
      ) : (
        <BooksTable
          books={books.data}
          onReplace={(book) => {
            setMessage('');
            setReplacing(book);
          }}
        />
      )}
    </div>
  );
}
