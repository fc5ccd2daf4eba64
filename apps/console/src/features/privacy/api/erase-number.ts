import { type PrivacyErasure, privacyErasureSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { queryKeys } from '../../../lib/query-keys';
import { useInvalidatingMutation } from '../../../lib/react-query';

/**
 * POST /api/privacy/erase (admins): the number replaced by ERASED wherever it is held, its
 * deliveries on their way cancelled first; answers what changed.
 */
export function eraseNumber(phone: string): Promise<PrivacyErasure> {
  return request('/privacy/erase', { method: 'POST', body: { phone }, schema: privacyErasureSchema });
}

/** History, Deliveries and the Dashboard show what the erasure changed when next looked at. */
export const useEraseNumber = () =>
  useInvalidatingMutation(eraseNumber, {
    onSuccess: [queryKeys.calls.all, queryKeys.deliveries.all, queryKeys.stats.all],
  });
