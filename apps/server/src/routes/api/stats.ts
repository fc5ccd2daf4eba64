import { problemSchema, statsQuerySchema, statsSchema } from '@school/contract';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problem, sendProblem } from '../../http/problem.js';
import { readRolledUntil } from '../../stats/call-rollups.js';
import { callStats } from '../../stats/call-stats.js';
import { readDeliveriesRolledUntil } from '../../stats/delivery-rollups.js';
import { staffScope } from './staff-scope.js';

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
const MAX_BUCKETS = 5000;

/** The Dashboard's figures: calls, errors, latency and deliveries per time bucket. */
export const statsRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store } = app;

  app.get(
    '/stats',
    {
      schema: {
        summary: 'Calls, errors, latency and deliveries per time bucket',
        description:
          'Calls per bucket, operation and outcome; latency (p50, p95) per bucket; errors by status and by text; deliveries queued per bucket by what became of them. Defaults to the last 24 hours by hour. `to` is exclusive.',
        tags: ['service'],
        querystring: statsQuerySchema,
        response: { 200: statsSchema, 400: problemSchema },
      },
    },
    async (request, reply) => {
      const { bucket } = request.query;
      const bucketMs = BUCKET_MS[bucket];
      const to = request.query.to ? Date.parse(request.query.to) : Date.now();
      const from = request.query.from ? Date.parse(request.query.from) : to - 24 * 3_600_000;
      if (from >= to)
        return sendProblem(
          reply,
          problem(400, '`from` must be before `to`.', { errors: { from: 'must be before to' } }),
        );
      if ((to - from) / bucketMs > MAX_BUCKETS) {
        return sendProblem(
          reply,
          problem(
            400,
            `That period has more than ${MAX_BUCKETS} ${bucket} buckets; choose a longer bucket.`,
            {
              errors: { bucket: 'too short for the period' },
            },
          ),
        );
      }
      // On the read replica while it keeps up: the watermark from where the roll-ups are read.
      const stats = await callStats(
        store.reads,
        store.dialect,
        { from, to, bucketMs },
        {
          rolledUntil: await readRolledUntil(store.reads),
          deliveriesRolledUntil: await readDeliveriesRolledUntil(store.reads),
          // A member of staff limited to schools sees their schools' figures.
          scope: staffScope(request),
        },
      );
      const iso = (ms: number) => new Date(ms).toISOString();
      return {
        from: iso(from),
        to: iso(to),
        bucket,
        rows: stats.rows.map((r) => ({ ...r, bucket: iso(r.bucket) })),
        latency: stats.latency.map((r) => ({ ...r, bucket: iso(r.bucket) })),
        overallLatency: stats.overallLatency,
        statuses: stats.statuses,
        errors: stats.errors,
        otherErrors: stats.otherErrors,
        deliveries: stats.deliveries.map((r) => ({ ...r, bucket: iso(r.bucket) })),
      };
    },
  );
};
