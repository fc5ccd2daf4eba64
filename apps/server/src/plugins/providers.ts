import fp from 'fastify-plugin';
import { createPushProvider, createSmsFallbackProvider, createSmsProvider } from '../providers/index.js';
import type { PushProvider, SmsProvider } from '../providers/types.js';
import { instrumentProvider } from './metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The SMS and push providers deliveries go through. */
    providers: {
      readonly sms: SmsProvider;
      /** SMS_FALLBACK_PROVIDER's, when set. */
      readonly smsFallback: SmsProvider | undefined;
      readonly push: PushProvider;
    };
  }
}

/** The providers, each send timed (school_provider_request_duration_seconds). */
export const providersPlugin = fp(
  async (app) => {
    const { config, metrics } = app;
    const providerLog = { logger: app.log.child({ component: 'provider' }) };
    const sms = createSmsProvider(config, providerLog);
    const smsFallback = createSmsFallbackProvider(config);
    app.decorate('providers', {
      sms: instrumentProvider('sms', sms, metrics, sms.name),
      smsFallback:
        smsFallback && instrumentProvider('sms', smsFallback, metrics, `${smsFallback.name}-fallback`),
      push: instrumentProvider('push', createPushProvider(config, providerLog), metrics),
    });
  },
  { name: 'providers', dependencies: ['config', 'metrics'] },
);
