import { groups, operationByName } from '@school/contract';
import { NavLink, useParams } from 'react-router';
import { paths } from '../../../config/paths';
import { OperationForm } from './operation-form';
import '../send.css';

/**
 * Each operation by what it does, for staff; its wire name (what a school's server calls) beside
 * it in small print.
 */
export const PLAIN_NAMES: Readonly<Record<string, string>> = {
  AuthCode: 'Send a login code',
  GetBookPdfByTerm: "Get a term's book",
  SendNotificationType: 'Notify a school',
  SendMarkNotes: 'Notify a class of new marks',
  pushNoti: 'Send waiting pushes now',
};

/** An operation's plain name with its wire name in small print. */
function OperationName({ name }: { name: string }) {
  const plain = PLAIN_NAMES[name];
  if (!plain) return <>{name}</>;
  return (
    <>
      {plain} <code className="operation-wire-name">{name}</code>
    </>
  );
}

/** One operation's form (`/send/:operation`; /send goes to the first, app/router.tsx). */
export function SendPage() {
  const { operation } = useParams();
  const op = operation ? operationByName(operation) : undefined;

  return (
    <div className="page send-page">
      <title>{`Send${op ? ` · ${PLAIN_NAMES[op.name] ?? op.name}` : ''} · School Messaging`}</title>
      <h1>Send</h1>
      <div className="send-layout">
        <nav aria-label="Operations" className="operation-nav">
          {groups.map((group) => (
            <div key={group.name} className="operation-group">
              <p className="operation-group-title">{group.title}</p>
              <ul>
                {group.operations.map((o) => (
                  <li key={o.name}>
                    <NavLink to={paths.send.href(o.name)} className="operation-link">
                      <OperationName name={o.name} />
                    </NavLink>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </nav>
        <div className="operation-panel">
          {op ? (
            <>
              <h2 id="operation-heading">
                <OperationName name={op.name} />
              </h2>
              <p className="operation-summary">{op.summary}</p>
              {/* A fresh form (values, outcome) per operation. */}
              <OperationForm key={op.name} op={op} />
            </>
          ) : (
            <>
              <h2>Unknown operation</h2>
              <p role="alert">There is no operation named “{operation}”. Pick one from the list.</p>
            </>
          )}
        </div>
      </div>
    </div>
  );
}
