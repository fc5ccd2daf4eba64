import type { Attempt, DeliveryDetail } from '@school/contract';
import { Link } from 'react-router';
import { CodeBlock } from '../../../components/ui/code-block';
import { DeliveryStatusBadge } from '../../../components/ui/delivery';
import { RecordPage, RecordQuery } from '../../../components/ui/record-page';
import { Timestamp } from '../../../components/ui/timestamp';
import { paths } from '../../../config/paths';
import { DELIVERY_KIND_LABELS, formatDuration } from '../../../lib/format';
import { useDelivery } from '../api/get-delivery';
import { STATUS_EXPLANATIONS } from './delivery-status';
import { DeliveryVerdict } from './delivery-verdict';
import { RetryDelivery } from './retry-delivery';
import '../deliveries.css';

export function DeliveryPage() {
  return (
    <RecordPage title="Delivery" back={{ label: 'Deliveries', href: paths.deliveries.href }}>
      {(id) => <DeliveryView id={id} />}
    </RecordPage>
  );
}

function DeliveryView({ id }: { id: number }) {
  const delivery = useDelivery(id);
  return (
    <RecordQuery query={delivery} noun="delivery" id={id}>
      {(d) => (
        <>
          <DeliveryVerdict delivery={d} />
          <Summary delivery={d} />
          <RetryDelivery delivery={d} />
          <Attempts attempts={d.attemptLog} status={d.status} />
        </>
      )}
    </RecordQuery>
  );
}

/** When something happened; `due`: when something is to happen. */
const time = (iso: string | null, none = '—', due = false) =>
  iso ? (
    <Timestamp iso={iso} variant={due ? 'recent' : 'clock'} due={due} />
  ) : (
    <span className="muted">{none}</span>
  );

/** States in which the delivery can still go out (a dead one by a retry): its next attempt and expiry matter. */
const STILL_SENDABLE: ReadonlySet<DeliveryDetail['status']> = new Set(['pending', 'sending', 'dead']);

function Summary({ delivery: d }: { delivery: DeliveryDetail }) {
  const data = Object.entries(d.data ?? {});
  return (
    <dl className="summary">
      <dt>Status</dt>
      <dd>
        <DeliveryStatusBadge status={d.status} />{' '}
        <span className="muted">{STATUS_EXPLANATIONS[d.status]}</span>
      </dd>
      <dt>Kind</dt>
      <dd>
        {DELIVERY_KIND_LABELS[d.kind]} <span className="muted">through {d.provider}</span>
      </dd>
      <dt>Recipient</dt>
      <dd className="param-value">{d.recipient}</dd>
      {d.title !== null ? (
        <>
          <dt>Title</dt>
          <dd>{d.title}</dd>
        </>
      ) : null}
      <dt>{d.kind === 'sms' ? 'Text' : 'Body'}</dt>
      <dd className="message-text">{d.text || <span className="muted">(empty)</span>}</dd>
      {d.data ? (
        <>
          <dt>Data</dt>
          <dd>
            {data.length === 0 ? (
              <span className="muted">none</span>
            ) : (
              <ul className="params">
                {data.map(([name, value]) => (
                  <li key={name}>
                    <span className="param-name">{name}</span>=<span className="param-value">{value}</span>
                  </li>
                ))}
              </ul>
            )}
          </dd>
        </>
      ) : null}
      <dt>Attempts</dt>
      <dd>
        {d.attempts}
        {d.attemptLog.length > d.attempts ? (
          <span className="muted"> since it was last retried ({d.attemptLog.length} in all, below)</span>
        ) : null}
      </dd>
      {STILL_SENDABLE.has(d.status) && d.status !== 'dead' ? (
        <>
          <dt>Next attempt</dt>
          <dd>{time(d.nextAttemptAt, '—', true)}</dd>
        </>
      ) : null}
      {d.expiresAt && STILL_SENDABLE.has(d.status) ? (
        <>
          <dt>Expires</dt>
          <dd>{time(d.expiresAt, '—', true)}</dd>
        </>
      ) : null}
      <dt>Provider's id</dt>
      <dd>{d.providerId ? <code>{d.providerId}</code> : <span className="muted">—</span>}</dd>
      <dt>Provider's status</dt>
      <dd>{d.providerStatus ?? <span className="muted">none reported</span>}</dd>
      {d.sentAt && d.unsureProvider && d.unsureProvider !== d.provider ? (
        <>
          <dt>May have arrived twice</dt>
          <dd>
            {d.unsureProvider} did not answer whether it took the message before {d.provider} sent it: the
            recipient may have received it from both. A duplicate code is chosen over none.
          </dd>
        </>
      ) : null}
      <dt>Last error</dt>
      <dd>
        {d.lastError ? <span className="call-error">{d.lastError}</span> : <span className="muted">—</span>}
      </dd>
      <dt>Queued</dt>
      <dd>{time(d.createdAt)}</dd>
      <dt>Updated</dt>
      <dd>{time(d.updatedAt)}</dd>
      <dt>Sent</dt>
      <dd>{time(d.sentAt, 'not yet')}</dd>
      <dt>Call</dt>
      <dd>
        <Link to={paths.call.href(d.callId)}>Call #{d.callId} in History</Link>
      </dd>
    </dl>
  );
}

type AttemptShown = NonNullable<Attempt['outcome']> | 'running' | 'logged';

const OUTCOME_LABELS: Record<AttemptShown, string> = {
  sent: 'Sent',
  logged: 'Logged',
  transient: 'Transient error',
  permanent: 'Permanent error',
  interrupted: 'Interrupted',
  running: 'Under way',
};

const OUTCOME_BADGES: Record<AttemptShown, string> = {
  sent: 'badge-ok',
  logged: 'badge-neutral',
  transient: 'badge-client-error',
  permanent: 'badge-server-error',
  interrupted: 'badge-client-error',
  running: 'badge-neutral',
};

/** The attempts, oldest first, as a timeline. */
function Attempts({ attempts, status }: { attempts: readonly Attempt[]; status: DeliveryDetail['status'] }) {
  return (
    <section aria-labelledby="attempts-heading">
      <h2 id="attempts-heading">Attempts</h2>
      {attempts.length === 0 ? (
        <p className="muted">
          No attempts yet{status === 'pending' ? ': it is waiting for the dispatcher.' : '.'}
        </p>
      ) : (
        <ol className="timeline">
          {attempts.map((a, index) => {
            // The log provider's attempts wrote to the server's log: nothing was sent.
            const outcome = a.outcome === 'sent' && status === 'logged' ? 'logged' : (a.outcome ?? 'running');
            const took =
              a.finishedAt !== null ? Date.parse(a.finishedAt) - Date.parse(a.startedAt) : Number.NaN;
            return (
              <li key={a.id} className={`timeline-item timeline-${outcome}`}>
                <h3 className="timeline-title">
                  Attempt {index + 1}:{' '}
                  <span className={`badge ${OUTCOME_BADGES[outcome]}`}>{OUTCOME_LABELS[outcome]}</span>
                </h3>
                <dl className="summary">
                  <dt>Provider</dt>
                  <dd>{a.provider ?? <span className="muted">not recorded</span>}</dd>
                  <dt>Started</dt>
                  <dd>{time(a.startedAt)}</dd>
                  <dt>Finished</dt>
                  <dd>
                    {time(a.finishedAt, 'still under way')}
                    {Number.isFinite(took) ? <span className="muted"> ({formatDuration(took)})</span> : null}
                  </dd>
                  {/* Recorded for failures; a success's status is in the provider's response below. */}
                  {a.status !== null ? (
                    <>
                      <dt>HTTP status</dt>
                      <dd>{a.status}</dd>
                    </>
                  ) : null}
                  <dt>Error</dt>
                  <dd>
                    {a.error ? (
                      <span className="call-error">{a.error}</span>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </dd>
                  {a.retryAfterMs !== null ? (
                    <>
                      <dt>Retry after</dt>
                      <dd>{formatDuration(a.retryAfterMs)}</dd>
                    </>
                  ) : null}
                  <dt>Provider response</dt>
                  <dd>
                    {a.response ? (
                      <CodeBlock text={a.response} label={`Provider response, attempt ${index + 1}`} wrap />
                    ) : (
                      <span className="muted">none</span>
                    )}
                  </dd>
                </dl>
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
