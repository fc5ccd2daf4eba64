import {
  type RecoveryCodes,
  recoveryCodesSchema,
  type TotpActivateInput,
  type TotpDisableInput,
  type TotpEnrolment,
  type TotpStartInput,
  totpEnrolmentSchema,
} from '@school/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { z } from 'zod';
import { request } from '../../../lib/api-client';
import { getSessionQueryOptions } from '../../../lib/session';

/**
 * One's own second factor (TOTP): POST /api/session/totp with the password starts setting one up
 * (a new secret, for the authenticator app); PUT with a code from the app turns it on, ends one's
 * other sessions and answers the recovery codes, shown once; DELETE with the password turns it off. 409 when one is on already (POST), or none is
 * being set up (PUT); 400 with `errors.code` / `errors.password` when wrong.
 */
export function startSecondFactor(input: TotpStartInput): Promise<TotpEnrolment> {
  return request('/session/totp', { method: 'POST', body: input, schema: totpEnrolmentSchema });
}

export function activateSecondFactor(input: TotpActivateInput): Promise<RecoveryCodes> {
  return request('/session/totp', { method: 'PUT', body: input, schema: recoveryCodesSchema });
}

export function disableSecondFactor(input: TotpDisableInput): Promise<undefined> {
  return request('/session/totp', { method: 'DELETE', body: input, schema: z.undefined() });
}

export const useStartSecondFactor = () => useMutation({ mutationFn: startSecondFactor });

/** On and off change the session (`secondFactor`): it is read again. */
function useSessionChange<Input, Output>(mutationFn: (input: Input) => Promise<Output>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () => queryClient.invalidateQueries({ queryKey: getSessionQueryOptions().queryKey }),
  });
}

export const useActivateSecondFactor = () => useSessionChange(activateSecondFactor);
export const useDisableSecondFactor = () => useSessionChange(disableSecondFactor);
