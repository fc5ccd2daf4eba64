import type { FastifyPluginAsync } from 'fastify';
import { verifyTwilioSignature } from '../providers/index.js';

const TEXT = 'text/plain; charset=utf-8';

/**
 * `POST /hooks/twilio/status`: Twilio's StatusCallback for the messages we sent. The signature
 * (X-Twilio-Signature over the callback URL and the form fields, keyed by the auth token) is
 * checked before anything is read; then the outbox records the message's status on its delivery
 * (by MessageSid).
 */
export const twilioStatusRoutes: FastifyPluginAsync = async (app) => {
  const { config, outbox } = app;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_r, body, done) => done(null, body),
  );

  app.post('/hooks/twilio/status', async (request, reply) => {
    const url = config.TWILIO_STATUS_CALLBACK_URL;
    const token = config.TWILIO_AUTH_TOKEN;
    if (config.SMS_PROVIDER !== 'twilio' || !url || !token) {
      return reply.code(404).type(TEXT).send('Twilio status callbacks are not configured here.');
    }
    const params: Record<string, string> = Object.create(null);
    for (const [k, v] of new URLSearchParams(String(request.body ?? ''))) params[k] = v;
    const signature = request.headers['x-twilio-signature'];
    if (!verifyTwilioSignature(url, params, Array.isArray(signature) ? signature[0] : signature, token)) {
      request.log.warn('Twilio status callback with a bad signature');
      return reply.code(403).type(TEXT).send('Invalid signature.');
    }
    const sid = params.MessageSid ?? params.SmsSid;
    const status = params.MessageStatus ?? params.SmsStatus;
    if (!sid || !status) return reply.code(400).type(TEXT).send('MessageSid and MessageStatus are required.');
    const text = params.ErrorCode ? `${status} (error ${params.ErrorCode})` : status;
    const known = await outbox.deliveries.recordProviderStatus('twilio', sid, text.slice(0, 200), Date.now());
    if (!known) request.log.info({ sid }, 'status callback for a message we do not know');
    // Twilio only needs a 2xx; an empty TwiML-free answer.
    return reply.code(204).send();
  });
};
