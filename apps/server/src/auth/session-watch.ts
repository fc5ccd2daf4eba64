import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isUnavailableError } from '../store/index.js';

/** How often a long-lived response re-checks its session. */
export const SESSION_RECHECK_MS = 2000;

/**
 * Ends a long-lived response (History's live feed, an export under way) within SESSION_RECHECK_MS
 * of its session ending: a logout, a user disabled or reset, the session past SESSION_MAX_AGE or
 * idle — on this instance or another (the check reads the store, which every instance shares).
 * While the store cannot be reached nothing can be told, and the response goes on. Returns what
 * stops the watch once the response ends by itself.
 */
export function endWithSession(app: FastifyInstance, request: FastifyRequest, end: () => void): () => void {
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    app.sessions
      .lasts(request)
      .then((lasts) => {
        if (!lasts) end();
      })
      .catch((err: unknown) => {
        if (!isUnavailableError(err))
          request.log.error({ err }, 'could not re-check the session of a long-lived response');
      })
      .finally(() => {
        checking = false;
      });
  }, SESSION_RECHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
