import type { ProviderInfo } from '@school/contract';
import { useQuery } from '@tanstack/react-query';
import { Timestamp } from '../../../components/ui/timestamp';
import { REFUSAL_REMEDY, type Refusal, useRefusalWords } from '../../../lib/provider-refusal';
import { getServiceInfoQueryOptions } from '../../../lib/service-info';

/** The channel each operation queues its messages on (none: GetBookPdfByTerm). */
const CHANNEL: Readonly<Record<string, 'sms' | 'push' | undefined>> = {
  AuthCode: 'sms',
  SendNotificationType: 'push',
  SendMarkNotes: 'push',
  pushNoti: 'push',
};

/**
 * How often the providers' state is read again while Send is open (ms): short, so that a refusal
 * of the message just sent is said before the next one is.
 */
const FOLLOW_MS = 5_000;

/**
 * Whether what this operation queues can be sent now, said before sending and beside the result:
 * nothing while its provider works; that it refuses every message, and what to do, while it does;
 * which provider takes over while it is paused; that messages wait when none can take them (a code
 * sent by hand would otherwise read "Waiting for its first attempt" with no reason given).
 */
export function SendingState({ operation }: { operation: string }) {
  const channel = CHANNEL[operation];
  const service = useQuery({
    ...getServiceInfoQueryOptions(),
    staleTime: FOLLOW_MS,
    refetchInterval: FOLLOW_MS,
  });
  const providers = service.data?.providers;
  if (!channel || !providers) return null;
  const primary = channel === 'sms' ? providers.sms : providers.push;
  const fallback = channel === 'sms' ? providers.smsFallback : null;
  const what = channel === 'sms' ? 'SMS' : 'push notifications';
  if (primary.refusing)
    return <Refusing channel={channel} primary={primary} refusal={primary.refusing} fallback={fallback} />;
  const since = <Timestamp iso={primary.circuit.since} />;
  if (primary.circuit.state === 'closed') return null;
  if (primary.circuit.state === 'half-open') {
    return (
      <p className="status status-warning" role="status">
        The {what} provider ({primary.id}) failed and is being tried again (since {since}): what you send now
        may wait a little.
      </p>
    );
  }
  if (fallback && fallback.circuit.state !== 'open') {
    return (
      <p className="status status-warning" role="status">
        {channel === 'sms' ? 'SMS go' : 'Push notifications go'} through the fallback provider ({fallback.id})
        for now: {primary.id} failed repeatedly and is paused (since {since}). It is tried again by itself.
      </p>
    );
  }
  return (
    <div className="status status-error" role="alert">
      <p className="status-title">Sending {what} is paused</p>
      <p>
        The provider ({primary.id}) failed repeatedly (since {since}), so nothing is sent to it
        {primary.circuit.until ? (
          <>
            {' '}
            until <Timestamp iso={primary.circuit.until} variant="clock" />, when it is tried again
          </>
        ) : (
          ' for a while'
        )}
        . What you send now is recorded and waits until it works again;{' '}
        {channel === 'sms' ? 'an auth code is never sent after its validity.' : 'it is sent then.'}
      </p>
    </div>
  );
}

/**
 * The provider refuses every message (its account, from what it answered): what is sent now is
 * most likely refused too, unless a fallback that does not refuse takes it over at once.
 */
function Refusing({
  channel,
  primary,
  refusal,
  fallback,
}: {
  channel: 'sms' | 'push';
  primary: ProviderInfo;
  refusal: Refusal;
  fallback: ProviderInfo | null;
}) {
  const words = useRefusalWords();
  const what = channel === 'sms' ? 'SMS' : 'push';
  const refusing = `The ${what} provider (${primary.id}) is refusing: ${words(refusal)}.`;
  if (fallback && !fallback.refusing && fallback.circuit.state !== 'open') {
    return (
      <p className="status status-warning" role="status">
        {refusing} What you send now goes to the fallback provider ({fallback.id}) once {primary.id} refuses
        it. {REFUSAL_REMEDY}
      </p>
    );
  }
  return (
    <div className="status status-error" role="alert">
      <p className="status-title">The {what} provider refuses every message</p>
      <p>
        {refusing} What you send now will most likely be refused too. {REFUSAL_REMEDY}
      </p>
    </div>
  );
}
