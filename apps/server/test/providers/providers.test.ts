import { afterEach, describe, expect, it } from 'vitest';
import { parseRetryAfter, redact, truncate } from '../../src/providers/http.js';
import {
  createPushProvider,
  createSmsProvider,
  providerConfigSchema,
  renderSmsText,
} from '../../src/providers/index.js';
import { startFakeServer } from './fake-server.js';

describe('the log providers (the default)', () => {
  const logged: { object: Record<string, unknown>; message: string }[] = [];
  const logger = {
    info: (object: Record<string, unknown>, message: string) => logged.push({ object, message }),
  };
  afterEach(() => {
    logged.length = 0;
  });

  it('are chosen when nothing is configured, and send nothing anywhere', async () => {
    const config = providerConfigSchema.parse({});
    const sms = createSmsProvider(config, { logger });
    const push = createPushProvider(config, { logger });
    expect([sms.name, push.name]).toEqual(['log', 'log']);

    // A fake server would see any request; these providers make none whatever the base URLs.
    const fake = await startFakeServer();
    try {
      const withUrls = providerConfigSchema.parse({ TWILIO_BASE_URL: fake.url, FCM_BASE_URL: fake.url });
      const results = [
        await createSmsProvider(withUrls).send({
          to: '+447911123456',
          text: 'Your code is 4711',
          idempotencyKey: 'k1',
        }),
        await createPushProvider(withUrls).send({
          topic: 't',
          title: 'T',
          body: 'B',
          data: {},
          idempotencyKey: 'k2',
        }),
      ];
      expect(results).toEqual([
        { ok: true, response: 'logged, not sent' },
        { ok: true, response: 'logged, not sent' },
      ]);
      expect(fake.requests).toHaveLength(0);
    } finally {
      await fake.close();
    }
  });

  it('log the SMS text with its code masked, and the push title, body and data', async () => {
    const config = providerConfigSchema.parse({});
    await createSmsProvider(config, { logger }).send({
      to: '+447911123456',
      text: 'Your verification code is 4711',
      maskedText: 'Your verification code is ***',
      idempotencyKey: 'k1',
    });
    await createPushProvider(config, { logger }).send({
      topic: 'school-example',
      title: 'New homework',
      body: 'There is a new homework notification for you.',
      data: { type: 'homework', id: '1201' },
      idempotencyKey: 'k2',
    });
    expect(logged).toEqual([
      {
        object: {
          provider: 'log',
          to: '+447911123456',
          text: 'Your verification code is ***',
          idempotencyKey: 'k1',
        },
        message: 'SMS logged, not sent (SMS_PROVIDER=log)',
      },
      {
        object: {
          provider: 'log',
          topic: 'school-example',
          title: 'New homework',
          body: 'There is a new homework notification for you.',
          data: { type: 'homework', id: '1201' },
          idempotencyKey: 'k2',
        },
        message: 'Push logged, not sent (PUSH_PROVIDER=log)',
      },
    ]);
  });

  it('never log a text that came without its masked form', async () => {
    const config = providerConfigSchema.parse({});
    const sms = createSmsProvider(config, { logger });
    await sms.send({ to: '+447911123456', text: 'Your verification code is Z9Q4', idempotencyKey: 'k2' });
    expect(logged.map((l) => l.object.text)).toEqual([
      '(not logged: no masked text came with it, and the text holds the code)',
    ]);
    expect(JSON.stringify(logged)).not.toContain('Z9Q4');
    expect(sms.describe()).toBe(
      'log: writes each SMS to the server log (its number masked to the country code and last three digits, its text with the code masked); sends nothing (SMS_PROVIDER=log)',
    );
    expect(createPushProvider(config).describe()).toBe(
      'log: writes each push to the server log (its topic, title, body and data); sends nothing (PUSH_PROVIDER=log)',
    );
  });
});

describe('renderSmsText', () => {
  it('puts the code where {code} is, every time, literally', () => {
    expect(renderSmsText('Your verification code is {code}', 'A1B2')).toBe('Your verification code is A1B2');
    expect(renderSmsText('{code} is your code ({code})', '42')).toBe('42 is your code (42)');
    expect(renderSmsText('Code: {code}', "$&$'")).toBe("Code: $&$'");
    expect(renderSmsText('Code: {CODE} {code}', '7')).toBe('Code: {CODE} 7');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('reads delay-seconds and HTTP dates as milliseconds', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:59:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    for (const value of [null, undefined, '', '-5', '1.5', 'soon', 'Funday, 99 Foo 2030'])
      expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe('recording helpers', () => {
  it('truncate keeps about 500 characters and says how many were cut', () => {
    expect(truncate('short')).toBe('short');
    const long = truncate('x'.repeat(1200));
    expect(long.startsWith('x'.repeat(500))).toBe(true);
    expect(long).toContain('(700 more characters)');
  });
  it('redact removes every occurrence of every secret, longest first', () => {
    expect(redact('token abcd1234 and abcd1234-extended', ['abcd1234', 'abcd1234-extended'])).toBe(
      'token [redacted] and [redacted]',
    );
    expect(redact('abc', ['a', undefined])).toBe('abc');
  });
});
