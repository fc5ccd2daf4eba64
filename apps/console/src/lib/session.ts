import { type Session, sessionSchema } from '@school/contract';
import { type QueryClient, queryOptions, useQuery } from '@tanstack/react-query';
import { isUnauthorized, request } from './api-client';
import { queryKeys } from './query-keys';

/**
 * GET /api/session: who is logged in, or null when nobody is (the server answers 401). Read by the
 * app shell (guards, header), the auth pages and Users (to mark "you"), so it lives here rather
 * than in a feature.
 */
export async function getSession(signal?: AbortSignal): Promise<Session | null> {
  try {
    return await request('/session', { schema: sessionSchema, signal });
  } catch (error) {
    if (isUnauthorized(error)) return null;
    throw error;
  }
}

export const getSessionQueryOptions = () =>
  queryOptions({
    queryKey: queryKeys.session.all,
    queryFn: ({ signal }) => getSession(signal),
    // The session changes by logging in or out here, or by a 401 elsewhere: never by age alone.
    staleTime: Number.POSITIVE_INFINITY,
    meta: { authRequest: true },
  });

export const useSession = () => useQuery(getSessionQueryOptions());

/**
 * An admin of every school: who may manage schools, books, templates, users and the privacy
 * requests. An admin limited to schools acts as an operator for them (docs/security.md).
 */
export const isOrganisationAdmin = (session: Session | null | undefined): boolean =>
  session?.user.role === 'admin' && session.user.schoolIds === null;

/** How the last session ended, kept beside it for the app shell (auth-guards.tsx). */
const endedKey = ['session-ended'] as const;
type Ended = 'logged-out' | 'expired';

/** Everything cached but the session itself: it belonged to the session that ends or ended. */
const forgetSessionData = (queryClient: QueryClient) =>
  queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== queryKeys.session.all[0] });

/**
 * The session is over: it becomes null and the app shell shows the login page. When it expired
 * (a 401 from any request) the login page brings the reader back to where they were; when they
 * logged out, the next login starts afresh (it may be someone else's).
 */
export function endSession(queryClient: QueryClient, how: Ended): void {
  if (how === 'logged-out') forgetSessionData(queryClient);
  queryClient.setQueryData<Ended>(endedKey, how);
  queryClient.setQueryData(queryKeys.session.all, null);
}

export const sessionEnded = (queryClient: QueryClient): Ended | undefined =>
  queryClient.getQueryData<Ended>(endedKey);

/** A new session (logged in, or the first admin made): what was cached before goes. */
export function startSession(queryClient: QueryClient, session: Session): void {
  forgetSessionData(queryClient);
  queryClient.setQueryData(queryKeys.session.all, session);
}
