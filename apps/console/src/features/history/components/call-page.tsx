import { BINDING_LABELS, type CallDetail, type CallSchool, callVerdict } from '@school/contract';
import { useId, useRef, useState } from 'react';
import { CodeBlock } from '../../../components/ui/code-block';
import { CopyButton } from '../../../components/ui/copy-button';
import { RecordPage, RecordQuery } from '../../../components/ui/record-page';
import { Timestamp } from '../../../components/ui/timestamp';
import { VerdictBadge } from '../../../components/ui/verdict';
import { paths } from '../../../config/paths';
import { type ExplainedVerdict, verdictOfDeliveries, wireAnswer } from '../../../lib/call-verdict';
import { formatBytes, formatDuration } from '../../../lib/format';
import { prettyHttpMessage } from '../../../lib/pretty-message';
import { useCall } from '../api/get-call';
import { useCallDeliveries } from '../api/get-call-deliveries';
import { CallDeliveries } from './call-deliveries';
import { ReplayCall } from './replay-call';
import '../history.css';

export function CallPage() {
  return (
    <RecordPage title="Call" back={{ label: 'History', href: paths.history.href }}>
      {(id) => <CallView id={id} />}
    </RecordPage>
  );
}

function CallView({ id }: { id: number }) {
  const call = useCall(id);
  const [pretty, setPretty] = useState(true);
  return (
    <RecordQuery query={call} noun="call" id={id}>
      {(data) => (
        <>
          <Summary call={data} />
          <ReplayCall call={data} />
          <CallDeliveries callId={data.id} />
          <div className="toolbar">
            <label className="checkbox">
              <input type="checkbox" checked={pretty} onChange={(e) => setPretty(e.target.checked)} /> Indent
              bodies (XML, JSON)
            </label>
          </div>
          <div className="messages">
            <Message title="Request" text={data.request} bytes={data.requestBytes} pretty={pretty} />
            <Message title="Response" text={data.response} bytes={data.responseBytes} pretty={pretty} />
          </div>
        </>
      )}
    </RecordQuery>
  );
}

function Summary({ call }: { call: CallDetail }) {
  const params = Object.entries(call.params ?? {});
  // What the server's log lines of this call carry as `reqId`.
  const requestIdRef = useRef<HTMLElement>(null);
  return (
    <dl className="summary">
      <dt>Time</dt>
      <dd>
        <Timestamp iso={call.at} variant="clock" />
      </dd>
      <dt>Operation</dt>
      <dd>
        {call.operation ?? 'Unknown operation: the service has no such path or name'}{' '}
        <span className="muted">({call.group})</span>
      </dd>
      <dt>Protocol</dt>
      <dd>{BINDING_LABELS[call.binding]}</dd>
      <dt>Caller</dt>
      <dd>
        {call.callerIp}
        {call.userAgent ? <span className="muted"> · {call.userAgent}</span> : null}
      </dd>
      {call.school === undefined ? null : (
        <>
          <dt>School</dt>
          <dd>
            <CallSchoolName school={call.school} />
          </dd>
        </>
      )}
      <dt>Parameters</dt>
      <dd>
        {params.length === 0 ? (
          <span className="muted">{call.params ? 'none' : 'could not be read'}</span>
        ) : (
          <ul className="params">
            {params.map(([name, value]) => (
              <li key={name}>
                <span className="param-name">{name}</span>=<span className="param-value">{value}</span>
              </li>
            ))}
          </ul>
        )}
      </dd>
      <dt>Result</dt>
      <dd>
        <CallResult call={call} />
      </dd>
      <dt>Wire answer</dt>
      <dd>
        {wireAnswer(call)}
        {call.error ? <span className="call-error">{call.error}</span> : null}
      </dd>
      <dt>Duration</dt>
      <dd>{formatDuration(call.durationMs)}</dd>
      <dt>Note</dt>
      <dd>{call.note ?? <span className="muted">none</span>}</dd>
      <dt>Request ID</dt>
      <dd>
        {call.requestId ? (
          <>
            <code ref={requestIdRef}>{call.requestId}</code>{' '}
            <CopyButton text={call.requestId} label="Copy request ID" target={requestIdRef} />
          </>
        ) : (
          <span className="muted">not recorded</span>
        )}
      </dd>
    </dl>
  );
}

/**
 * Whose call it is, decided as it was recorded: the school's name (or its id, once deleted), or
 * none, which only staff of every school see.
 */
function CallSchoolName({ school }: { school: CallSchool | null }) {
  if (school === null)
    return (
      <>
        None <span className="muted">(seen by staff of all schools only)</span>
      </>
    );
  return school.name ?? <span className="muted">school {school.id} (deleted)</span>;
}

/**
 * The call's one verdict, from its deliveries as they are now (the call's own summary was read
 * once): with why its SMS or push did not go, when it did not.
 */
function CallResult({ call }: { call: CallDetail }) {
  const deliveries = useCallDeliveries(call.id);
  const verdict: ExplainedVerdict = deliveries.data
    ? verdictOfDeliveries(call, deliveries.data.items)
    : callVerdict(call, call.delivery);
  return (
    <>
      <VerdictBadge verdict={verdict} />{' '}
      {verdict.why ? <span className={`verdict-why verdict-why-${verdict.tone}`}>{verdict.why}.</span> : null}
    </>
  );
}

function Message({
  title,
  text,
  bytes,
  pretty,
}: {
  title: string;
  text: string;
  bytes: number;
  pretty: boolean;
}) {
  const headingId = useId();
  const ref = useRef<HTMLPreElement>(null);
  // Recorded messages use CRLF; lines are shown with LF, copied as recorded.
  const lf = text.replace(/\r\n/g, '\n');
  const shown = pretty ? prettyHttpMessage(lf) : lf;
  return (
    // Not a section: the text's own box is the region its heading names (CodeBlock).
    <div className="message">
      <div className="snippet-head">
        <h2 id={headingId}>{title}</h2>
        <span className="muted">{formatBytes(bytes)}</span>
        <CopyButton text={text} label={`Copy ${title.toLowerCase()}`} target={ref} />
      </div>
      <CodeBlock ref={ref} text={shown || '(empty)'} labelledBy={headingId} />
    </div>
  );
}
