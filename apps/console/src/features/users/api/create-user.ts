import { type User, type UserCreateInput, userSchema } from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';
import { getUsersQueryOptions } from '../../../lib/users';

/** POST /api/users (admins): 201 with the user; 409 when the username is taken. */
export function createUser(input: UserCreateInput): Promise<User> {
  return request('/users', { method: 'POST', body: input, schema: userSchema });
}

export function useCreateUser() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: createUser,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: getUsersQueryOptions().queryKey });
    },
  });
}
