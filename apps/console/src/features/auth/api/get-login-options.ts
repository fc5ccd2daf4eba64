import { type LoginOptions, loginOptionsSchema } from '@school/contract';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { request } from '../../../lib/api-client';

/**
 * GET /api/session/login-options (public): whether the password form is offered, and single
 * sign-on's button.
 */
export function getLoginOptions(signal?: AbortSignal): Promise<LoginOptions> {
  return request('/session/login-options', { schema: loginOptionsSchema, signal });
}

export const getLoginOptionsQueryOptions = () =>
  queryOptions({
    queryKey: ['login-options'] as const,
    queryFn: ({ signal }) => getLoginOptions(signal),
    // The server's settings: they change with a restart only.
    staleTime: Number.POSITIVE_INFINITY,
    meta: { authRequest: true },
  });

export const useLoginOptions = () => useQuery(getLoginOptionsQueryOptions());

/** Where the single sign-on button goes: the server sends the browser on to the identity provider. */
export const singleSignOnHref = (next: string | null): string =>
  `/api/session/oidc/start${next ? `?next=${encodeURIComponent(next)}` : ''}`;
