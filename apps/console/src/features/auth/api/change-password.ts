import type { PasswordChangeInput } from '@school/contract';
import { useMutation } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';

/**
 * PUT /api/session/password: 204. 400 with `errors.currentPassword` when the current password is
 * wrong. The user's other sessions end; this one goes on.
 */
export function changePassword(input: PasswordChangeInput): Promise<undefined> {
  return request('/session/password', { method: 'PUT', body: input, schema: z.undefined() });
}

export const useChangePassword = () => useMutation({ mutationFn: changePassword });
