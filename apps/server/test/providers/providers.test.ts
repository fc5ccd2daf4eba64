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

  it('log what would have been sent, without the auth code', async () => {
    const config = providerConfigSchema.parse({});
    await createSmsProvider(config, { logger }).send({
      to: '+447911123456',
      text: 'Your code is 4711',
      idempotencyKey: 'k1',
    });
    expect(logged).toHaveLength(1);
    expect(logged[0]?.object).toMatchObject({ provider: 'log', to: '+447911123456', idempotencyKey: 'k1' });
    expect(JSON.stringify(logged)).not.toContain('4711');
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
