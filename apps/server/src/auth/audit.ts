import type { FastifyRequest } from 'fastify';
import type { NewAuditEntry, Store } from '../store/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Records a console action in the audit log, with the request's address and user (or `user`,
     * for a login, where the request has none yet; or `username` alone, as typed at a failed login).
     */
    audit(request: FastifyRequest, entry: AuditInput): Promise<void>;
  }
}

export type AuditInput = Omit<NewAuditEntry, 'userId' | 'username' | 'ip'> & {
  readonly user?: { readonly id: number; readonly username: string };
  readonly username?: string;
};

/** The audit log's writer: a failure to write is logged, never the request's failure. */
export function createAudit(store: Store) {
  return async (request: FastifyRequest, { user, username, ...entry }: AuditInput): Promise<void> => {
    try {
      await store.audit.add({
        ...entry,
        userId: user?.id ?? request.staff?.userId ?? null,
        username: user?.username ?? username ?? request.staff?.username ?? null,
        ip: request.ip,
      });
    } catch (err) {
      request.log.error({ err, action: entry.action }, 'could not write the audit entry');
    }
  };
}
