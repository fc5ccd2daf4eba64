import { type User, userSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getSessionQueryOptions } from '../../../lib/session';
import { getUsersQueryOptions } from '../../../lib/users';

/**
 * DELETE /api/users/{id}/totp (admins): the user's second factor is removed and their sessions end
 * (an admin resetting their own keeps this one). Answers the user.
 */
export function resetSecondFactor(id: number): Promise<User> {
  return request(`/users/${id}/totp`, { method: 'DELETE', schema: userSchema });
}

export function useResetSecondFactor() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: resetSecondFactor,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: getUsersQueryOptions().queryKey });
    },
    onSuccess: (user) => {
      const session = queryClient.getQueryData(getSessionQueryOptions().queryKey);
      if (session?.user.id === user.id) {
        void queryClient.invalidateQueries({ queryKey: getSessionQueryOptions().queryKey });
      }
    },
  });
}
