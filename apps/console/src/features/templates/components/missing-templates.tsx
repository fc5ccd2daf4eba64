import { useId } from 'react';
import { EmptyState, ErrorState, Loading } from '../../../components/ui/status';
import { Timestamp } from '../../../components/ui/timestamp';
import { useMissingTemplates } from '../api/get-missing-templates';
import { templateTypeProblem } from '../utils/template-form';

const count = new Intl.NumberFormat('en-GB');
const days = (sinceIso: string) => Math.round((Date.now() - Date.parse(sinceIso)) / 86_400_000);

/**
 * The notification types recent calls sent that no template answers (they got the generic one),
 * each with a way to start its template.
 */
export function MissingTemplates({ onCreate }: { onCreate: (type: string) => void }) {
  const missing = useMissingTemplates();
  const headingId = useId();
  const data = missing.data;
  return (
    <section className="card missing-templates" aria-labelledby={headingId}>
      <h2 id={headingId}>Types received without a template</h2>
      {missing.isPending ? (
        <Loading>Looking at the recent calls…</Loading>
      ) : missing.isError ? (
        <ErrorState error={missing.error} title="Could not list them" onRetry={() => missing.refetch()} />
      ) : data ? (
        <>
          <p className="hint">
            From the successful SendNotificationType calls of the last {days(data.since)} days
            {data.limited ? `, the newest ${count.format(data.limit)} of them` : ''}: these types got the
            generic template.
          </p>
          {data.types.length === 0 ? (
            <EmptyState>Every type received has a template of its own.</EmptyState>
          ) : (
            <div className="table-wrap">
              <table className="missing cards">
                <caption className="visually-hidden">Notification types received without a template</caption>
                <thead>
                  <tr>
                    <th scope="col">Type</th>
                    <th scope="col" className="numeric">
                      Calls
                    </th>
                    <th scope="col">Last received</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {data.types.map((t) => (
                    <tr key={t.type}>
                      <th scope="row" data-label="Type">
                        <code>{t.type}</code>
                        <span className="muted topic-note">
                          sent as{' '}
                          {t.spellings.map((spelling, i) => (
                            <span key={spelling}>
                              {i > 0 ? ', ' : null}
                              <code>{spelling}</code>
                            </span>
                          ))}
                        </span>
                      </th>
                      <td className="numeric" data-label="Calls">
                        {count.format(t.count)}
                      </td>
                      <td data-label="Last received">
                        <Timestamp iso={t.lastSeenAt} />
                      </td>
                      <td className="cell-actions">
                        <CreateAction type={t.type} onCreate={onCreate} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {data.more > 0 ? (
            <p className="hint">
              And {count.format(data.more)} more type{data.more === 1 ? '' : 's'}, sent less often.
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}

/** Starts a template for the type, or says why it cannot have one (e.g. it holds a space). */
function CreateAction({ type, onCreate }: { type: string; onCreate: (type: string) => void }) {
  const problem = templateTypeProblem(type);
  if (problem) return <span className="muted">No template possible: {problem}</span>;
  return (
    <button type="button" className="button button-small" onClick={() => onCreate(type)}>
      Create template <span className="visually-hidden">for {type}</span>
    </button>
  );
}
