import { type CallFilters, type CallSummary, callSummarySchema } from '@school/contract';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { apiPath } from '../../../lib/api-client';
import { getCallsQueryOptions } from './get-calls';

export type StreamState = 'off' | 'connecting' | 'open' | 'reconnecting' | 'closed';

/** GET /api/calls/stream: Server-Sent Events, one `call` event per new call matching the filters. */
export const callsStreamUrl = (filters: CallFilters): string => apiPath('/calls/stream', filters);

/**
 * While `enabled`, listens to the stream and puts each new call at the top of the list's cached
 * first page, so the table grows without a reload. EventSource reconnects by itself after a drop.
 */
export function useCallsStream(filters: CallFilters, enabled: boolean) {
  const queryClient = useQueryClient();
  const [state, setState] = useState<StreamState>('off');
  const [received, setReceived] = useState(0);
  const key = JSON.stringify(filters);

  useEffect(() => {
    if (!enabled) {
      setState('off');
      return;
    }
    const current = JSON.parse(key) as CallFilters;
    const { queryKey } = getCallsQueryOptions(current);
    const prepend = (call: CallSummary) =>
      queryClient.setQueryData(queryKey, (data) => {
        if (!data) return data;
        if (data.pages.some((page) => page.items.some((item) => item.id === call.id))) return data;
        const [first, ...rest] = data.pages;
        if (!first) return data;
        return { ...data, pages: [{ ...first, items: [call, ...first.items] }, ...rest] };
      });

    setState('connecting');
    setReceived(0);
    const source = new EventSource(callsStreamUrl(current));
    source.onopen = () => setState('open');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    source.addEventListener('call', (event) => {
      let json: unknown;
      try {
        json = JSON.parse((event as MessageEvent<string>).data);
      } catch {
        return;
      }
      const parsed = callSummarySchema.safeParse(json);
      if (!parsed.success) return;
      prepend(parsed.data);
      setReceived((n) => n + 1);
    });
    return () => source.close();
  }, [enabled, key, queryClient]);

  return { state, received };
}
