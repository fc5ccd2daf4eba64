import { useEffect, useRef, useState } from 'react';
import { showFieldErrors } from '../../../components/ui/save-form';
import { ProblemMessage } from '../../../components/ui/status';
import { ProblemError } from '../../../lib/api-client';
import { useEraseNumber } from '../api/erase-number';
import { useFindReport } from '../api/find-report';
import { EraseNumber } from './erase-number';
import { ErasureDone } from './erasure-done';
import { LookupForm } from './lookup-form';
import { ReportView } from './report-view';
import '../privacy.css';

/**
 * A parent's phone number (admins): everything held about it, to download and give them, and its
 * erasure. The number is kept in the page only (not in its address, nor in the cache once left).
 */
export function PrivacyPage() {
  const find = useFindReport();
  const erase = useEraseNumber();
  // A new form (emptied) once the number it held is erased.
  const [formKey, setFormKey] = useState(0);
  const reportHeading = useRef<HTMLHeadingElement>(null);
  const report = find.data;
  useEffect(() => {
    if (report) reportHeading.current?.focus();
  }, [report]);

  return (
    <div className="page privacy-page">
      <title>Privacy · School Messaging</title>
      <h1>Privacy</h1>
      <p className="hint">
        When a parent asks what this service holds about their phone number, or asks for it to be deleted:
        find everything held about the number, download the report to give them, and erase it. Each report and
        erasure is recorded in the audit log.
      </p>
      <LookupForm
        key={formKey}
        finding={find.isPending}
        onFind={(phone, methods) => {
          erase.reset();
          find.mutate(phone, {
            onError: (error) => {
              // A number the server cannot read: its words under the field.
              if (showFieldErrors(error, ['phone'], methods)) return;
              if (error instanceof ProblemError && error.status === 400) {
                methods.setError('phone', {
                  type: 'server',
                  message: error.problem.detail ?? error.problem.title,
                });
              }
            },
          });
        }}
      />
      {find.isError && !isFieldError(find.error) ? (
        <ProblemMessage error={find.error} prefix="No report" />
      ) : null}
      {report ? (
        <>
          <ReportView report={report} headingRef={reportHeading} />
          <EraseNumber
            key={report.phone}
            report={report}
            erasing={erase.isPending}
            error={erase.error}
            onErase={() =>
              erase.mutate(report.phone, {
                onSuccess: () => {
                  find.reset();
                  setFormKey((k) => k + 1);
                },
              })
            }
          />
        </>
      ) : null}
      {erase.isSuccess && erase.variables !== undefined ? (
        <ErasureDone phone={erase.variables} erasure={erase.data} />
      ) : null}
    </div>
  );
}

/** A refusal shown under the phone field rather than below the form. */
const isFieldError = (error: unknown): boolean => error instanceof ProblemError && error.status === 400;
