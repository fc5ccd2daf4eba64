import fp from 'fastify-plugin';
import { createAuthCodeLimits } from '../limits/authcode.js';
import { createSmsDestinations, type SmsDestinations } from '../limits/sms-destinations.js';
import { createOperationRunner, type OperationRunner } from '../operations/run.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The operation code every door (the .asmx bindings, the console) calls. */
    operations: OperationRunner;
    /** Where AuthCode sends SMS (for the Service page). */
    smsDestinations: SmsDestinations;
  }
}

/** The operation runner with its handlers and AuthCode's limits. */
export const operationsPlugin = fp(
  async (app) => {
    const { config, store, history, providers, outbox } = app;
    const smsDestinations = createSmsDestinations({
      allowedCountries: config.smsAllowedCountries,
      allowFixedLine: config.SMS_ALLOW_FIXED_LINE === 'on',
    });
    app.decorate('smsDestinations', smsDestinations);
    // The open endpoint sending SMS anywhere is what SMS pumping needs (docs/security.md).
    if (smsDestinations.allowedCountries === null) {
      app.log.warn(
        'AuthCode sends SMS to every country: set SMS_ALLOWED_COUNTRIES (or DEFAULT_PHONE_REGION) to the countries of your parents’ phones, so strangers cannot make the school pay for SMS to far or premium numbers',
      );
    }
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
          perRange: config.AUTHCODE_LIMIT_PER_RANGE,
        }),
        destinations: smsDestinations,
        onCodeRefused: (reason) => app.metrics.observeCodeRefused(reason),
        pendingPushes: () => outbox.deliveries.pendingPushes(),
        dispatchPushesNow: () => {
          void outbox.dispatchPushesNow();
        },
        log: app.log,
      }),
    );
  },
  { name: 'operations', dependencies: ['config', 'metrics', 'store', 'history', 'providers', 'outbox'] },
);
