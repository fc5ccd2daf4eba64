import type { Book } from '@school/contract';
import { useEffect, useId } from 'react';
import { useFormContext } from 'react-hook-form';
import { z } from 'zod';
import { FileField, Form, TextField } from '../../../components/ui/form';
import { ProblemMessage } from '../../../components/ui/status';
import { ProblemError } from '../../../lib/api-client';
import { formatBytes } from '../../../lib/format';
import { useUploadBook } from '../api/upload-book';

const isPdf = (file: File) => file.type === 'application/pdf' || /\.pdf$/i.test(file.name);

// termId and classId as GetBookPdfByTerm receives them (the server takes 1 to 1024 characters).
const key = (name: string) =>
  z.string().trim().min(1, `Give the ${name}.`).max(1024, `At most 1024 characters.`);

const uploadFormSchema = z.object({
  termId: key('term (termId)'),
  classId: key('class (classId)'),
  file: z
    .custom<FileList>(
      (value) => typeof FileList !== 'undefined' && value instanceof FileList,
      'Choose a PDF file.',
    )
    .refine((files) => files.length === 1, 'Choose a PDF file.')
    .transform((files) => files[0] as File)
    .refine(isPdf, 'This file is not a PDF: choose a PDF file.'),
});

/** Puts the keyboard on the file input when the form opens to replace a book. */
function FocusFile() {
  const { setFocus } = useFormContext();
  useEffect(() => setFocus('file'), [setFocus]);
  return null;
}

/**
 * Uploads a book for a term and class (or, with `replacing`, a new file for that book's term and
 * class): the PDF goes as the request body, with a progress bar while it travels.
 */
export function UploadForm({
  replacing,
  onUploading,
  onUploaded,
  onCancel,
}: {
  replacing: Book | null;
  /** An upload starts: an earlier "Uploaded." no longer applies. */
  onUploading: () => void;
  onUploaded: (book: Book, replaced: boolean) => void;
  onCancel: () => void;
}) {
  const { mutation, progress } = useUploadBook();
  const headingId = useId();
  const percent =
    progress?.total && progress.total > 0 ? Math.round((progress.loaded / progress.total) * 100) : undefined;

  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>
        {replacing
          ? `Replace the book of term ${replacing.termId}, class ${replacing.classId}`
          : 'Upload a book'}
      </h2>
      <Form
        schema={uploadFormSchema}
        options={{
          defaultValues: { termId: replacing?.termId ?? '', classId: replacing?.classId ?? '' },
        }}
        aria-labelledby={headingId}
        className="upload-form"
        onSubmit={(values, methods) => {
          onUploading();
          mutation.mutate(values, {
            onSuccess: (book) => {
              methods.reset();
              onUploaded(book, replacing !== null);
            },
            onError: (error) => {
              const errors = error instanceof ProblemError ? error.problem.errors : undefined;
              for (const [name, message] of Object.entries(errors ?? {})) {
                if (name === 'termId' || name === 'classId')
                  methods.setError(name, { type: 'server', message });
              }
            },
          });
        }}
      >
        {() => (
          <>
            {replacing ? <FocusFile /> : null}
            <p className="hint">
              {replacing
                ? 'The new file takes the place of the old one at once; apps asking for this term and class get it.'
                : 'Apps get it with GetBookPdfByTerm for this term and class. A book already there for them is replaced.'}
            </p>
            <div className="field-row">
              <TextField
                name="termId"
                label={
                  <>
                    Term <span className="muted">(termId)</span>
                  </>
                }
                description="The term, as apps send it."
                readOnly={replacing !== null}
                autoComplete="off"
                spellCheck={false}
              />
              <TextField
                name="classId"
                label={
                  <>
                    Class <span className="muted">(classId)</span>
                  </>
                }
                description="The class, as apps send it."
                readOnly={replacing !== null}
                autoComplete="off"
                spellCheck={false}
              />
            </div>
            <FileField name="file" label="PDF file" accept="application/pdf,.pdf" />
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={mutation.isPending}>
                {mutation.isPending ? 'Uploading…' : replacing ? 'Replace' : 'Upload'}
              </button>
              {replacing ? (
                <button type="button" className="button" onClick={onCancel} disabled={mutation.isPending}>
                  Cancel
                </button>
              ) : null}
            </div>
            {mutation.isPending && progress ? (
              <div className="upload-progress">
                <progress
                  aria-label="Upload progress"
                  max={100}
                  value={percent}
                  aria-valuetext={percent === undefined ? 'Starting…' : `${percent}%`}
                />
                <span className="muted">
                  {percent === undefined
                    ? 'Starting…'
                    : `${percent}% (${formatBytes(progress.loaded)} of ${formatBytes(progress.total ?? 0)})`}
                </span>
              </div>
            ) : null}
            {mutation.isError ? <ProblemMessage error={mutation.error} prefix="Not uploaded" /> : null}
          </>
        )}
      </Form>
    </section>
  );
}
