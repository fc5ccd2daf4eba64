import fp from 'fastify-plugin';
import { createAuthCodeLimits } from '../limits/authcode.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
  }
}

/** The operation runner with its handlers and AuthCode's limits. */
export const operationsPlugin = fp(
  async (app) => {
    const { config, store, history, providers, outbox } = app;
    app.decorate(
      'operations',
      createOperationRunner({
        store,
        defaultPhoneRegion: config.DEFAULT_PHONE_REGION,
        smsProvider: providers.sms.name,
        pushProvider: providers.push.name,
        smsTemplate: config.SMS_TEMPLATE,
        authCodeTtlMs: config.AUTHCODE_TTL,
        limits: createAuthCodeLimits({
          store,
          recent: { calls: history, sms: outbox.deliveries },
          perPhone: config.AUTHCODE_LIMIT_PER_PHONE,
          perIp: config.AUTHCODE_LIMIT_PER_IP,
          perCountry: config.AUTHCODE_LIMIT_PER_COUNTRY,
        }),
        pendingPushes: () => outbox.deliveries.pendingPushes(),
        dispatchPushesNow: () => {
          void outbox.dispatchPushesNow();
        },
      }),
    );
  },
  { name: 'operations', dependencies: ['config', 'store', 'history', 'providers', 'outbox'] },
);
