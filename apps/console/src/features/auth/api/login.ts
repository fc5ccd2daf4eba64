import { type LoginInput, type Session, sessionSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { startSession } from '../../../lib/session';

/**
 * POST /api/session: 200 with the session and its cookie; 401 "Wrong username or password." (for
 * an unknown user, a wrong password and a disabled account alike); 429 with Retry-After after too
 * many failures.
 */
export function login(input: LoginInput): Promise<Session> {
  return request('/session', { method: 'POST', body: input, schema: sessionSchema });
}

export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: login,
    meta: { authRequest: true },
    // What was cached belonged to the session before (maybe another person's, maybe refused with
    // a 401); the app shell then sees the session and leaves the login page (auth-guards.tsx).
    onSuccess: (session) => startSession(queryClient, session),
  });
}
