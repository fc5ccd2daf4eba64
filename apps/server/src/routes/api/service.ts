import { groups, problemSchema, serviceInfoSchema, statsQuerySchema, statsSchema } from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problem, sendProblem } from '../../http/problem.js';
import { readRefusing } from '../../outbox/provider-health.js';
import { readRolledUntil } from '../../stats/call-rollups.js';
import { callStats } from '../../stats/call-stats.js';
import { readDeliveriesRolledUntil } from '../../stats/delivery-rollups.js';
import { publicBaseUrl } from '../asmx/base-url.js';

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/**
 * Each provider with its circuit (outbox/circuit.ts: this instance's) and whether it is refusing
 * (outbox/provider-health.ts: from the attempts every instance recorded).
 */
async function providerInfo(app: FastifyInstance) {
  const circuits = app.outbox.circuits();
  const { sms, smsFallback, push } = app.providers;
  const ids = [sms.name, ...(smsFallback ? [`${smsFallback.name}-fallback`] : []), push.name];
  const refusing = await readRefusing(app.store.reads, ids);
  const iso = (ms: number) => new Date(ms).toISOString();
  const info = (provider: { name: string; describe(): string }, id: string) => {
    const circuit = circuits.find((c) => c.provider === id);
    const refusal = refusing.get(id);
    return {
      name: provider.name,
      id,
      description: provider.describe(),
      circuit: {
        state: circuit?.state ?? 'closed',
        since: iso(circuit?.since ?? Date.now()),
        until: circuit?.until ? iso(circuit.until) : null,
      },
      refusing: refusal ? { ...refusal, since: iso(refusal.since) } : null,
    };
  };
  return {
    sms: info(sms, sms.name),
    smsFallback: smsFallback ? info(smsFallback, `${smsFallback.name}-fallback`) : null,
    push: info(push, push.name),
  };
}
const MAX_BUCKETS = 5000;

/** What the service is (endpoints, WSDL, namespace) and how it is used (stats). */
export const serviceRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { config, store } = app;

  app.get(
    '/service',
    {
      schema: {
        summary: 'The endpoints, their WSDL and help pages, and the namespace',
        tags: ['service'],
        response: { 200: serviceInfoSchema },
      },
    },
    async (request) => {
      const { base: baseUrl } = publicBaseUrl(config, request);
      return {
        namespace: config.SERVICE_NAMESPACE,
        baseUrl,
        defaultPhoneRegion: config.DEFAULT_PHONE_REGION ?? null,
        smsDestinations: {
          allowedCountries: app.smsDestinations.allowedCountries && [...app.smsDestinations.allowedCountries],
          fixedLines: app.smsDestinations.allowFixedLine,
        },
        providers: await providerInfo(app),
        storage: app.diskSpace.status(),
        groups: groups.map((g) => ({
          name: g.name,
          title: g.title,
          path: g.path,
          url: `${baseUrl}${g.path}`,
          wsdl: `${baseUrl}${g.path}?wsdl`,
          help: `${baseUrl}${g.path}`,
          operations: g.operations.map((op) => ({
            name: op.name,
            summary: op.summary,
            help: `${baseUrl}${g.path}?op=${encodeURIComponent(op.name)}`,
            params: op.params.map((p) => ({ name: p.name, description: p.description })),
          })),
        })),
      };
    },
  );

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
