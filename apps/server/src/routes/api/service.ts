import { groups, serviceInfoSchema } from '@school/contract';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { readRefusing } from '../../outbox/provider-health.js';
import { publicBaseUrl } from '../asmx/base-url.js';

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

/** What the service is: its endpoints, WSDL, help pages and namespace, its providers and storage. */
export const serviceRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { config } = app;

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
};
