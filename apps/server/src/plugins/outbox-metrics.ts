import { DELIVERY_STATUSES } from '@school/contract';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { readRefusing } from '../outbox/provider-health.js';
import type { OutboxFigures } from './metrics.js';

/**
 * The outbox's figures for /metrics (plugins/metrics.ts), read from the shared database at each
 * scrape, so that every instance reports the same outbox: the deliveries by status (the roll-ups'
 * counts, stats/delivery-rollups.ts), those due now, and which providers refuse for good.
 */
export const outboxMetricsPlugin = fp(
  async (app) => {
    app.metrics.watchOutbox(() => readOutboxFigures(app));
  },
  { name: 'outbox-metrics', dependencies: ['metrics', 'store', 'outbox', 'stats'] },
);

/** The outbox as one scrape reports it; throws while the database is away. */
async function readOutboxFigures(app: FastifyInstance): Promise<OutboxFigures> {
  // The database away: school_database_up says so; the outbox series go missing.
  app.store.availability.check();
  const now = Date.now();
  const lanes = app.outbox.circuits();
  const [byState, outbox, refusals] = await Promise.all([
    app.deliveryRollups.stateCounts(),
    app.outbox.deliveries.outbox(now),
    readRefusing(
      app.store.reads,
      lanes.map((l) => l.provider),
    ),
  ]);
  const deliveries = Object.fromEntries(
    DELIVERY_STATUSES.map((status) => [status, byState[status] + (status === 'sent' ? byState.logged : 0)]),
  ) as Record<(typeof DELIVERY_STATUSES)[number], number>;
  return {
    deliveries,
    due: outbox.due,
    oldestDueAgeSeconds: outbox.oldestDueAt === null ? 0 : Math.max(0, now - outbox.oldestDueAt) / 1000,
    refusing: lanes.map(({ kind, provider }) => ({
      kind,
      provider,
      refusing: Boolean(refusals.get(provider)),
    })),
  };
}
