/**
 * Phone numbers in the log (issue 45, docs/security.md#phone-numbers-in-the-log): every line masks
 * them to the country code and the last three digits, whatever field or shape they are in; what
 * is not a phone number (times, ids, addresses, dates) stays as it was.
 */
import { Writable } from 'node:stream';
import { regionsSharingCallingCode } from '@school/contract';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { callingCodeLength, type LogFormat, maskPhonesInLogLine, maskPhonesInText } from '../src/logging.js';
import { TEST_ADMIN, tempDataDir, waitUntil } from './helpers.js';

describe('a phone number in the log', () => {
  it('keeps the country code and the last three digits, whatever its spelling', () => {
    for (const [typed, shown] of [
      ['+447400123456', '+44•••••••456'],
      ['+44 7400 123456', '+44•••••••456'],
      ['+44 (0) 7400-123-456', '+44••••••••456'],
      ['+1 (555) 010-4821', '+1•••••••821'],
      ['+7 912 345-67-89', '+7•••••••789'],
      ['+353 85 123 4567', '+353••••••567'],
      ['+8613812345678', '+86••••••••678'],
      ['07400 123456', '••••••••456'],
      ['447400123456', '•••••••••456'],
    ] as const) {
      expect(maskPhonesInText(typed), typed).toBe(shown);
      expect(maskPhonesInText(`call ${typed} now`), typed).toBe(`call ${shown} now`);
    }
  });

  it('knows the length of every country calling code libphonenumber knows', () => {
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const codes = new Set<string>();
    for (const a of letters)
      for (const b of letters) {
        const { callingCode } = regionsSharingCallingCode(a + b);
        if (callingCode) codes.add(callingCode);
      }
    expect(codes.size).toBeGreaterThan(200);
    for (const code of codes) expect(callingCodeLength(`${code}123456789`), code).toBe(code.length);
  });

  it('masks numbers in URLs as clients send them: encoded, with + for spaces, in path parameters', () => {
    for (const [url, masked] of [
      [
        '/AuthCodeSending.asmx/AuthCode?code=***&phone=%2B447400123456',
        '/AuthCodeSending.asmx/AuthCode?code=***&phone=%2B44•••••••456',
      ],
      ['/AuthCode?phone=+447400123456&code=***', '/AuthCode?phone=+44•••••••456&code=***'],
      ['/AuthCode?phone=%2B44%207400%20123456', '/AuthCode?phone=%2B44•••••••456'],
      ['/AuthCode?phone=+44+7400+123456', '/AuthCode?phone=+44•••••••456'],
      ['/AuthCode?phone=%20447400123456', '/AuthCode?phone=%20•••••••••456'],
      ['/AuthCode;code=***;phone=07400123456', '/AuthCode;code=***;phone=••••••••456'],
      ['/api/calls?phone=%2B1%20(555)%20010-4821&limit=50', '/api/calls?phone=%2B1•••••••821&limit=50'],
    ] as const)
      expect(maskPhonesInText(url), url).toBe(masked);
  });

  it('leaves what is no phone number: ids in words, UUIDs, addresses, dates, short numbers', () => {
    for (const text of [
      'request 3f2a9c1e-8b7d-4e6f-9a0b-426614174000',
      '12345678-1b2c-4d5e-8f90-abcdefabcdef',
      'token=iMv7XhFjRCqZCwoORl4luT3lWKglHd1L',
      'Caller 192.168.100.200 is not allowed',
      'host 127.0.0.1:39112',
      'calls_2026_11 partition made at 2026-11-29T03:14:46.123Z',
      'retry at 2026-11-29 03:14:46',
      'closing took 1234 ms, 3 attempts, code 4821',
      'sha256-l6RqihZsavGqq+UpNoHddeuSJz/M6vnbEefFqU9bEu4=',
      'at file:///work/main/apps/server/dist/server.js:21774:15',
    ])
      expect(maskPhonesInText(text), text).toBe(text);
  });

  it('masks a JSON log line’s strings, never its numbers, and the line stays JSON', () => {
    const line = `${JSON.stringify({
      level: 50,
      time: 1795922032375,
      pid: 1234567,
      reqId: '0193a5c2-7d4e-7000-8000-426614174000',
      delivery: 98765432,
      ids: [1234567, 7654321],
      to: '+447400104821',
      also: 'tel:447400104821,447400104822',
      msg: 'gateway refused +44 7400 104821:\ninvalid destination 07400104821',
      err: { message: 'Key (phone)=(+447400104821) already exists.', detail: '\u001b447400104821' },
    })}\n`;
    const masked = maskPhonesInLogLine(line);
    expect(masked.endsWith('\n')).toBe(true);
    const parsed = JSON.parse(masked);
    expect(parsed).toMatchObject({
      time: 1795922032375,
      pid: 1234567,
      reqId: '0193a5c2-7d4e-7000-8000-426614174000',
      delivery: 98765432,
      ids: [1234567, 7654321],
      to: '+44•••••••821',
      also: 'tel:•••••••••821,•••••••••822',
      msg: 'gateway refused +44•••••••821:\ninvalid destination ••••••••821',
      err: { message: 'Key (phone)=(+44•••••••821) already exists.', detail: '\u001b•••••••••821' },
    });
    for (const digits of ['7400104821', '104821', '74001']) expect(masked).not.toContain(digits);
    // A line with nothing to mask is the same string.
    const plain = '{"level":30,"time":1795922032375,"msg":"request completed"}\n';
    expect(maskPhonesInLogLine(plain)).toBe(plain);
  });

  it('is linear in the text: a long run of digits and separators is no trap', () => {
    const hostile = `${'1 '.repeat(200_000)}x ${'12345678-'.repeat(50_000)}`;
    const started = performance.now();
    maskPhonesInText(hostile);
    maskPhonesInLogLine(JSON.stringify({ msg: hostile }));
    // Numbers after commas: each one's place in the line's strings is read once, not from the start.
    maskPhonesInLogLine(
      JSON.stringify({ msg: ',447400123456'.repeat(50_000), ids: Array(50_000).fill(1234567) }),
    );
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('the app’s log', () => {
  /** The app with its log written to a string, as `format` would write it before its stream. */
  async function appLogging(format: LogFormat) {
    const data = tempDataDir();
    let text = '';
    const stream = new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        done();
      },
    });
    const config = loadConfig({
      DATA_DIR: data.dir,
      LOG_LEVEL: 'debug',
      SQLITE_SYNCHRONOUS: 'NORMAL',
      AUTHCODE_LIMIT_PER_PHONE: 'off',
      ADMIN_USERNAME: TEST_ADMIN.username,
      ADMIN_PASSWORD: TEST_ADMIN.password,
    });
    const app = await buildApp(config, { logger: { stream }, logFormat: format, rollups: false });
    app.get('/echo-phone', { config: { access: 'public' } }, async () => {
      throw new Error('the gateway refused +44 7400 104821: not a mobile');
    });
    await app.ready();
    return {
      app,
      log: () => text,
      async close() {
        await app.close();
        data.remove();
      },
    };
  }

  it('masks the SMS the log provider writes, the URL with the phone, an error echoing one', async () => {
    const t = await appLogging('json');
    try {
      const res = await t.app.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=740010&phone=%2B44%207400%20104821',
      });
      expect(res.statusCode).toBe(200);
      await waitUntil(() => t.log().includes('SMS logged, not sent'), { what: 'the SMS in the log' });
      expect((await t.app.inject({ method: 'GET', url: '/echo-phone' })).statusCode).toBe(500);
      const lines = t
        .log()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const sms = lines.find((l) => l.msg === 'SMS logged, not sent (SMS_PROVIDER=log)');
      expect(sms?.to).toBe('+44•••••••821');
      const urls = lines.map((l) => (l.req as { url?: string } | undefined)?.url);
      expect(urls).toContain('/AuthCodeSending.asmx/AuthCode?code=***&phone=%2B44•••••••821');
      const errors = lines.map((l) => (l.err as { message?: string } | undefined)?.message);
      expect(errors).toContain('the gateway refused +44•••••••821: not a mobile');
      // Nowhere the number, nor the code whose digits it holds (740010 is in 7400 104821).
      expect(t.log()).not.toMatch(/7\D{0,3}4\D{0,3}0\D{0,3}0\D{0,3}1\D{0,3}0\D{0,3}4/);
      expect(t.log()).not.toContain('740010');
    } finally {
      await t.close();
    }
  });
});
