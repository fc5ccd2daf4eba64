import { type Session, type SetupInput, sessionSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { startSession } from '../../../lib/session';

/**
 * POST /api/setup: makes the first admin with the one-time token the server logged, and logs them
 * in (200 with the session and its cookie). 403 when the token is wrong or expired, 409 once any
 * user exists.
 */
export function setup(input: SetupInput): Promise<Session> {
  return request('/setup', { method: 'POST', body: input, schema: sessionSchema });
}

export function useSetup() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: setup,
    meta: { authRequest: true },
    onSuccess: (session) => startSession(queryClient, session),
  });
}
