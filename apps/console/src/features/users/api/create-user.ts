import { type User, type UserCreateInput, userSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useInvalidatingMutation } from '../../../lib/react-query';
import { getUsersQueryOptions } from '../../../lib/users';

/** POST /api/users (admins): 201 with the user; 409 when the username is taken. */
export function createUser(input: UserCreateInput): Promise<User> {
  return request('/users', { method: 'POST', body: input, schema: userSchema });
}

export const useCreateUser = () =>
  useInvalidatingMutation(createUser, { onSuccess: [getUsersQueryOptions().queryKey] });
