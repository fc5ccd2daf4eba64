import { ERASED, type PrivacyReport } from '@school/contract';
import { useId } from 'react';
import { useConfirmStep } from '../../../components/ui/confirm';
import { ProblemMessage } from '../../../components/ui/status';
import { count, ON_THEIR_WAY } from '../utils/words';

/**
 * Erasing the number of the report shown, in two steps: the button, then a question that says
 * what will happen before "Yes, erase" acts. Focus goes to that button (which the explanation
 * describes) and back to the first on Cancel or Escape.
 */
export function EraseNumber({
  report,
  erasing,
  error,
  onErase,
}: {
  report: PrivacyReport;
  erasing: boolean;
  /** Why the last erasure failed, if it did. */
  error: unknown;
  onErase: () => void;
}) {
  const headingId = useId();
  const whatId = useId();
  const { asking, ask, cancel, trigger, confirm } = useConfirmStep();
  const onTheirWay = report.deliveries.filter((d) => ON_THEIR_WAY.has(d.status)).length;

  return (
    <section className="card privacy-erase" aria-labelledby={headingId}>
      <h2 id={headingId}>Erase this number</h2>
      <p>
        When the parent asks for their number to be deleted. History, the Dashboard and the counts stay true:
        what held the number says “{ERASED}” instead.
      </p>
      {asking ? (
        <fieldset
          className="privacy-confirm"
          onKeyDown={(event) => {
            if (event.key === 'Escape' && !erasing) cancel();
          }}
        >
          <legend className="privacy-confirm-question">
            Erase {report.phone} from everything this service holds?
          </legend>
          <ul id={whatId}>
            <li>
              {onTheirWay > 0
                ? `${count(onTheirWay, 'delivery', 'deliveries')} still on ${onTheirWay === 1 ? 'its way to it is' : 'their way to it are'} cancelled first: ${onTheirWay === 1 ? 'it' : 'they'} will not be sent.`
                : 'Anything still on its way to it is cancelled first and will not be sent.'}
            </li>
            <li>
              The number is replaced by “{ERASED}” everywhere it is held: the calls’ parameters, requests,
              responses and notes, the deliveries and their attempts, the audit log and the Dashboard’s
              figures.
            </li>
            <li>This cannot be undone: the number is not kept anywhere to bring it back.</li>
            <li>
              Backups taken before now still hold the number: restoring one brings it back, so erase it again
              after any restore.
            </li>
            <li>The audit log records the erasure by a keyed hash of the number, never the number itself.</li>
          </ul>
          <div className="actions">
            <button
              ref={confirm}
              type="button"
              className="button button-danger"
              aria-describedby={whatId}
              onClick={onErase}
              disabled={erasing}
            >
              {erasing ? 'Erasing…' : 'Yes, erase this number'}
            </button>
            <button type="button" className="button" onClick={cancel} disabled={erasing}>
              Cancel
            </button>
          </div>
        </fieldset>
      ) : (
        <div className="actions">
          <button ref={trigger} type="button" className="button button-danger" onClick={ask}>
            Erase this number
          </button>
        </div>
      )}
      {error ? <ProblemMessage error={error} prefix="Not erased" /> : null}
    </section>
  );
}
