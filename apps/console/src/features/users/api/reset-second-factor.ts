import { type User, userSchema } from '@school/contract';
import { request } from '../../../lib/api-client';
import { useUserChange } from './user-change';

/**
 * DELETE /api/users/{id}/totp (admins): the user's second factor is removed and their sessions end
 * (an admin resetting their own keeps this one). Answers the user.
 */
export function resetSecondFactor(id: number): Promise<User> {
  return request(`/users/${id}/totp`, { method: 'DELETE', schema: userSchema });
}

export const useResetSecondFactor = () => useUserChange(resetSecondFactor);
