import { type User, type UserUpdateInput, userSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getSessionQueryOptions } from '../../../lib/session';
import { getUsersQueryOptions } from '../../../lib/users';

/**
 * PATCH /api/users/{id} (admins): any of display name, role, disabled, password. A new password
 * or disabling ends the user's sessions. 409 when it would leave no enabled admin; 404 when gone.
 */
export function updateUser({ id, input }: { id: number; input: UserUpdateInput }): Promise<User> {
  return request(`/users/${id}`, { method: 'PATCH', body: input, schema: userSchema });
}

export function useUpdateUser() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: updateUser,
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: getUsersQueryOptions().queryKey });
    },
    onSuccess: (user) => {
      // Changing one's own account changes the session: the role (the navigation), or its end.
      const session = queryClient.getQueryData(getSessionQueryOptions().queryKey);
      if (session?.user.id === user.id) {
        void queryClient.invalidateQueries({ queryKey: getSessionQueryOptions().queryKey });
      }
    },
  });
}
