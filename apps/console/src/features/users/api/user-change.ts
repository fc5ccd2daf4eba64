import type { User } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { getSessionQueryOptions } from '../../../lib/session';
import { getUsersQueryOptions } from '../../../lib/users';

/**
 * A change to one staff account that answers the account. The list is read again however it ended
 * (a 409 or 404 means what is shown is out of date); the session too when the account is one's own:
 * its role drives the navigation, and a new password or disabling ends it.
 */
export function useUserChange<Input>(mutationFn: (input: Input) => Promise<User>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn,
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
