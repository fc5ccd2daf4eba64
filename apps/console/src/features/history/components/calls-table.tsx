import { BINDING_LABELS, type CallSummary, callVerdict } from '@school/contract';
import { type MouseEvent, useRef } from 'react';
import { Link, useLocation, useNavigate } from 'react-router';
import { Timestamp } from '../../../components/ui/timestamp';
import { VerdictBadge } from '../../../components/ui/verdict';
import { paths } from '../../../config/paths';
import { wireAnswer } from '../../../lib/call-verdict';
import { formatDuration, truncate } from '../../../lib/format';
import { useFocusOnReturn } from '../../../lib/return-focus';

function KeyParams({ params }: { params: CallSummary['params'] }) {
  const entries = Object.entries(params ?? {});
  if (entries.length === 0) return <span className="muted">{params ? 'none' : 'unreadable'}</span>;
  return (
    <ul className="params">
      {entries.map(([name, value]) => (
        <li key={name}>
          <span className="param-name">{name}</span>=
          <span className="param-value">{truncate(value, 32)}</span>
        </li>
      ))}
    </ul>
  );
}

/**
 * The call's one verdict: what the caller was answered and what came of the SMS or pushes it
 * queued, in one badge whose colour is the verdict's; the wire's own answer under it, smaller. A
 * call the live tail just added has not had its delivery looked up yet; the list is read again
 * in a moment.
 */
function ResultCell({ call }: { call: CallSummary }) {
  return (
    <>
      <VerdictBadge verdict={callVerdict(call, call.delivery)} />
      {call.error ? (
        // Whole, wrapping: the server's own sentences, which quote a caller's value shortened.
        <span className="call-error">{call.error}</span>
      ) : (
        <span className="wire-answer">Wire answer: {wireAnswer(call)}</span>
      )}
    </>
  );
}

/** Whether a click landed on something that acts by itself (the row's link, a button). */
const onControl = (target: EventTarget) =>
  target instanceof Element && target.closest('a, button, input, select, textarea, summary') !== null;

export function CallsTable({ calls }: { calls: readonly CallSummary[] }) {
  const location = useLocation();
  const navigate = useNavigate();
  const wrap = useRef<HTMLDivElement>(null);
  useFocusOnReturn(wrap);
  // A click anywhere on a row opens its call, as its link does (the link is the row's one stop for
  // the keyboard: Tab to the row, Enter). Not when the click ends a text selection, and with Ctrl
  // or ⌘ in a new tab, as a link would.
  const open = (event: MouseEvent<HTMLTableRowElement>, id: number) => {
    if (event.button !== 0 || onControl(event.target)) return;
    if ((window.getSelection()?.toString() ?? '') !== '') return;
    const href = paths.call.href(id);
    if (event.ctrlKey || event.metaKey) window.open(href, '_blank', 'noopener');
    else void navigate(href, { state: { search: location.search } });
  };
  return (
    <div className="table-wrap" ref={wrap}>
      <table className="calls cards">
        <caption className="visually-hidden">Calls, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Operation</th>
            <th scope="col" className="col-optional">
              Protocol
            </th>
            <th scope="col" className="col-optional">
              Caller
            </th>
            <th scope="col">Key parameters</th>
            <th scope="col">Result</th>
            <th scope="col" className="numeric col-optional">
              Duration
            </th>
          </tr>
        </thead>
        <tbody>
          {calls.map((call) => (
            <tr
              key={call.id}
              className={`call-row outcome-row-${call.outcome}`}
              onClick={(e) => open(e, call.id)}
            >
              <td data-label="Time">
                {/* The list's filters travel with the link, so "Back to History" returns to this view. */}
                <Link to={paths.call.href(call.id)} state={{ search: location.search }} data-record={call.id}>
                  <span className="visually-hidden">Call {call.id},</span>{' '}
                  <Timestamp iso={call.at} variant="clock" />
                </Link>
              </td>
              <td data-label="Operation">
                {call.operation ?? (
                  <span className="muted" title="A path or operation name the service does not have">
                    Unknown operation ({call.group})
                  </span>
                )}
              </td>
              <td className="col-optional" data-label="Protocol">
                {BINDING_LABELS[call.binding]}
              </td>
              <td className="col-optional" data-label="Caller">
                <span className="caller-ip">{call.callerIp}</span>
                {call.userAgent ? (
                  <span className="muted user-agent" title={call.userAgent}>
                    {truncate(call.userAgent, 30)}
                  </span>
                ) : null}
              </td>
              {/* What tells one call from another on a phone too (the phone number, the school). */}
              <td data-label="Key parameters">
                <KeyParams params={call.params} />
              </td>
              <td data-label="Result">
                <ResultCell call={call} />
              </td>
              <td className="numeric col-optional" data-label="Duration">
                {formatDuration(call.durationMs)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
