import { QueryClient } from '@tanstack/react-query';
import { ProblemError } from './api-client';

/** A client error (4xx) will not change by asking again; a network or server error may. */
function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ProblemError && error.status >= 400 && error.status < 500) return false;
  return failureCount < 2;
}

export function createQueryClient(overrides: { retry?: boolean } = {}): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 30_000,
        refetchOnWindowFocus: false,
        retry: overrides.retry === false ? false : shouldRetry,
      },
      mutations: { retry: false },
    },
  });
}
