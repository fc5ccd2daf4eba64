import type { CallDetail } from '@school/contract';
import { useId } from 'react';
import { Link, useNavigate } from 'react-router';
import { ConfirmButton } from '../../../components/ui/confirm';
import { ProblemMessage } from '../../../components/ui/status';
import { paths } from '../../../config/paths';
import { problemOf } from '../../../lib/api-client';
import { useReplayCall } from '../api/replay-call';
import { replayOf } from '../utils/replay';

/**
 * Replay: sends the call's parameters again from the console, after a confirmation, as a new
 * `console` call, then opens that call (refused or not: either way it is the new record). Calls
 * that cannot be replayed say why beside a disabled button.
 */
export function ReplayCall({ call }: { call: CallDetail }) {
  const id = useId();
  const navigate = useNavigate();
  const replay = useReplayCall();
  const plan = replayOf(call);

  if (!plan.ok) {
    return (
      <div className="replay">
        <button type="button" className="button button-small" disabled aria-describedby={`${id}-why`}>
          Replay
        </button>
        <p id={`${id}-why`} className="muted replay-why">
          Cannot be replayed: {plan.reason}
          {plan.why === 'secret' && call.operation ? (
            <>
              {' '}
              <Link to={paths.send.href(call.operation)}>Send a new {call.operation}</Link> instead.
            </>
          ) : null}
        </p>
      </div>
    );
  }

  const names = Object.keys(plan.values);
  const onConfirm = () =>
    replay.mutateAsync({ operation: plan.operation.name, values: plan.values }).then(
      (result) => navigate(paths.call.href(result.id)),
      (error: unknown) => {
        // Refused: recorded all the same, as a new call; that call says why.
        const callId = problemOf(error).callId;
        if (callId !== undefined) return navigate(paths.call.href(callId));
      },
    );
  return (
    <div className="replay">
      <ConfirmButton
        question={
          <>
            Send {plan.operation.name} again{names.length > 0 ? ` with the recorded ${names.join(', ')}` : ''}
            ? This makes a new call from the console: anything it sends goes out again.
          </>
        }
        confirmLabel="Yes, send again"
        onConfirm={onConfirm}
        pending={replay.isPending}
      >
        Replay
      </ConfirmButton>
      {replay.isError && problemOf(replay.error).callId === undefined ? (
        <ProblemMessage error={replay.error} prefix="Not replayed" />
      ) : null}
    </div>
  );
}
