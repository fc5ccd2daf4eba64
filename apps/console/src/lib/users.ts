import { type UserList, userListSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from './api-client';

// GET /api/users (admins). Shared by two features (Users manages them, Audit names them in its
// entries and its user filter), so it lives in lib rather than in either.

/** GET /api/users (admins): every staff account, disabled ones included. */
export function getUsers(signal?: AbortSignal): Promise<UserList> {
  return request('/users', { schema: userListSchema, signal });
}

export const getUsersQueryOptions = () =>
  queryOptions({
    queryKey: ['users'] as const,
    queryFn: ({ signal }) => getUsers(signal),
  });

/** `enabled: false` for someone who may not list them (anyone but an admin of every school). */
export const useUsers = ({ enabled = true }: { enabled?: boolean } = {}) =>
  useQuery({ ...getUsersQueryOptions(), enabled });
