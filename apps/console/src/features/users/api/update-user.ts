import { type User, type UserUpdateInput, userSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useUserChange } from './user-change';

/**
 * PATCH /api/users/{id} (admins): any of display name, role, disabled, password. A new password
 * or disabling ends the user's sessions. 409 when it would leave no enabled admin; 404 when gone.
 */
export function updateUser({ id, input }: { id: number; input: UserUpdateInput }): Promise<User> {
  return request(`/users/${id}`, { method: 'PATCH', body: input, schema: userSchema });
}

export const useUpdateUser = () => useUserChange(updateUser);
