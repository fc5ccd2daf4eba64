import { groups, operationByName } from '@school/contract';
import { Navigate, NavLink, useParams } from 'react-router';
import { paths } from '../../../config/paths';
import { OperationForm } from './operation-form';
import '../send.css';

export function SendPage() {
  const { operation } = useParams();
  const first = groups[0]?.operations[0];
  if (!operation && first) return <Navigate to={paths.send.href(first.name)} replace />;
  const op = operation ? operationByName(operation) : undefined;

  return (
    <div className="page send-page">
      <title>{`Send${op ? ` ${op.name}` : ''} · School Messaging`}</title>
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
                      {o.name}
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
              <h2 id="operation-heading">{op.name}</h2>
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
