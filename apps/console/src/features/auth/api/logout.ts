import { useMutation, useQueryClient } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { endSession } from '../../../lib/session';

/** DELETE /api/session: 204; the cookie is cleared and the session ends on the server. */
export function logout(): Promise<undefined> {
  return request('/session', { method: 'DELETE', schema: z.undefined() });
}

/** Logs out; the app shell then shows the login page, and nothing of the session stays cached. */
export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: logout,
    onSuccess: () => endSession(queryClient, 'logged-out'),
  });
}
