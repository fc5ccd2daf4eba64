import { type UserList, userListSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';

/** GET /api/users (admins): every staff account, disabled ones included. */
export function getUsers(signal?: AbortSignal): Promise<UserList> {
  return request('/users', { schema: userListSchema, signal });
}

export const getUsersQueryOptions = () =>
  queryOptions({
    queryKey: ['users'] as const,
    queryFn: ({ signal }) => getUsers(signal),
  });

export const useUsers = () => useQuery(getUsersQueryOptions());
