import { ERASED, type PrivacyErasure } from '@school/contract';
import { useEffect, useId, useRef } from 'react';
import { formatDuration } from '../../../lib/format';
import { count, diskWords } from '../utils/words';

/** What an erasure changed, as the server counted it; the heading takes the keyboard's focus. */
export function ErasureDone({ phone, erasure }: { phone: string; erasure: PrivacyErasure }) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <section className="card privacy-erased" aria-labelledby={headingId}>
      <h2 id={headingId} ref={heading} tabIndex={-1}>
        Erased {phone}
      </h2>
      <p>What held the number, as the server counted it:</p>
      <dl className="summary">
        <dt>Calls</dt>
        <dd>
          {erasure.calls}
          {erasure.calls > 0 ? (
            <span className="muted"> (still in History and the counts, saying “{ERASED}”)</span>
          ) : null}
        </dd>
        <dt>Deliveries</dt>
        <dd>
          {erasure.deliveries}
          {erasure.cancelled > 0 ? (
            <span className="muted"> ({erasure.cancelled} of them on their way, cancelled first)</span>
          ) : null}
        </dd>
        <dt>Delivery attempts</dt>
        <dd>{erasure.attempts}</dd>
        <dt>Audit entries</dt>
        <dd>{erasure.audit}</dd>
        <dt>AuthCode limit slots</dt>
        <dd>{erasure.limitSlots}</dd>
        <dt>Dashboard figures</dt>
        <dd>{count(erasure.rollups, 'row')}</dd>
        <dt>On disk</dt>
        <dd>{diskWords(erasure.disk)}</dd>
        <dt>Audited as</dt>
        <dd>
          <code className="privacy-hash">{erasure.hash}</code>
        </dd>
        <dt>Took</dt>
        <dd>{formatDuration(erasure.tookMs)}</dd>
      </dl>
      <p>
        Backups taken before now still hold the number: restoring one brings it back, so erase it again after
        any restore.
      </p>
    </section>
  );
}
