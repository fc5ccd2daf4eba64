import type { FastifyRequest } from 'fastify';
import type { SchoolScope } from '../../store/index.js';

/**
 * Whose calls, deliveries and figures a request reads (docs/security.md#who-sees-what): the
 * logged-in staff user's schools, or null when they are organisation-wide. A route that reads
 * them takes it here, once, and hands it to the read (History's query, the outbox's reads, the
 * statistics), which applies it. Without a staff user (never on these routes: their access rule
 * asks for one) nothing is seen.
 */
export const staffScope = (request: FastifyRequest): SchoolScope =>
  request.staff ? request.staff.schoolIds : [];
