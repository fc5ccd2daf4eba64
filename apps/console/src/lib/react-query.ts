import {
  MutationCache,
  QueryCache,
  QueryClient,
  type QueryKey,
  useMutation,
  useQueryClient,
} from '@tanstack/react-query';
import { isUnauthorized, ProblemError } from './api-client';
import { queryKeys } from './query-keys';
import { endSession } from './session';

declare module '@tanstack/react-query' {
  interface Register {
    queryMeta: { authRequest?: boolean };
    mutationMeta: { authRequest?: boolean };
  }
}

/** A client error (4xx) will not change by asking again; a network or server error may. */
function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ProblemError && error.status >= 400 && error.status < 500) return false;
  return failureCount < 2;
}

export function createQueryClient(overrides: { retry?: boolean } = {}): QueryClient {
  // The one place a 401 is handled: whatever asked (a page's query, a save, an upload), the session
  // is over, so it becomes null and the app shell sends the reader to the login page, which brings
  // them back here afterwards (app/auth-guards.tsx). The session query and the login and setup
  // posts are marked `authRequest`: their 401 is an answer, not a lost session.
  // A 403 that asks for a second factor first (REQUIRE_TOTP, turned on while this session was
  // open): the session is read again, and the app shell takes the reader to the Account page.
  const loggedOut = (error: unknown, meta: { authRequest?: boolean } | undefined) => {
    if (isUnauthorized(error) && !meta?.authRequest) endSession(client, 'expired');
    if (error instanceof ProblemError && error.problem.secondFactorSetupRequired) {
      void client.invalidateQueries({ queryKey: queryKeys.session.all });
    }
  };
  const client: QueryClient = new QueryClient({
    queryCache: new QueryCache({ onError: (error, query) => loggedOut(error, query.meta) }),
    mutationCache: new MutationCache({
      onError: (error, _variables, _context, mutation) => loggedOut(error, mutation.meta),
    }),
    defaultOptions: {
      queries: {
        staleTime: 30_000,
        refetchOnWindowFocus: false,
        retry: overrides.retry === false ? false : shouldRetry,
      },
      mutations: { retry: false },
    },
  });
  return client;
}

/**
 * The queries a mutation makes stale, and when: `onSuccess` once it succeeded, `onSettled` however
 * it ended (a refusal can mean what is shown is out of date, or the server recorded it anyway).
 */
export interface Invalidations {
  readonly onSuccess?: readonly QueryKey[];
  readonly onSettled?: readonly QueryKey[];
}

/**
 * A mutation that runs `mutationFn`, then invalidates the queries under each key, in order. Not
 * awaited: the mutation's outcome shows at once, open queries refetch behind it. A hook that does
 * more (writes the cache, awaits the refetch, reads the answer) calls `useMutation` itself.
 */
export function useInvalidatingMutation<TData, TVariables = void>(
  mutationFn: (variables: TVariables) => Promise<TData>,
  invalidations: Invalidations,
) {
  const queryClient = useQueryClient();
  const invalidate = (keys: readonly QueryKey[]) => {
    for (const queryKey of keys) void queryClient.invalidateQueries({ queryKey });
  };
  const { onSuccess, onSettled } = invalidations;
  return useMutation({
    mutationFn,
    onSuccess: onSuccess && (() => invalidate(onSuccess)),
    onSettled: onSettled && (() => invalidate(onSettled)),
  });
}
