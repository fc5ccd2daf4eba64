import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has embedded defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      SERVICE_NAMESPACE: 'http://tempuri.org/',
      MAX_BODY_BYTES: 1048576,
      ASMX_MAX_BODY_BYTES: 65536,
      RECORD_MAX_BYTES: 65536,
      LOG_LEVEL: 'info',
      TRUST_PROXY: false,
    });
    expect(config.PUBLIC_BASE_URL).toBeUndefined();
    expect(config.DEFAULT_PHONE_REGION).toBeUndefined();
    expect(config.dataDir).toBe(path.resolve('data'));
  });

  it('reads and normalises values; an empty value means the default', () => {
    const config = loadConfig({
      PORT: '8080',
      PUBLIC_BASE_URL: 'https://sms.example.org/',
      DEFAULT_PHONE_REGION: 'gb',
      TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
      LOG_LEVEL: '',
    });
    expect(config).toMatchObject({
      PORT: 8080,
      PUBLIC_BASE_URL: 'https://sms.example.org',
      DEFAULT_PHONE_REGION: 'GB',
      TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
      LOG_LEVEL: 'info',
    });
  });

  it("caps .asmx bodies by ASMX_MAX_BODY_BYTES apart from the API's MAX_BODY_BYTES", () => {
    expect(loadConfig({ ASMX_MAX_BODY_BYTES: '1024' })).toMatchObject({
      ASMX_MAX_BODY_BYTES: 1024,
      MAX_BODY_BYTES: 1048576,
    });
    expect(loadConfig({ ASMX_MAX_BODY_BYTES: '2097152', MAX_BODY_BYTES: '4096' })).toMatchObject({
      ASMX_MAX_BODY_BYTES: 2097152,
      MAX_BODY_BYTES: 4096,
    });
  });

  it('reads ASMX_ALLOWED_IPS as a comma-separated list of addresses and ranges, IPv4 and IPv6', () => {
    expect(
      loadConfig({ ASMX_ALLOWED_IPS: ' 203.0.113.0/24, 2001:db8::/128,::ffff:198.51.100.0/120 ,, 192.0.2.9' })
        .ASMX_ALLOWED_IPS,
    ).toEqual(['203.0.113.0/24', '2001:db8::/128', '::ffff:198.51.100.0/120', '192.0.2.9']);
    expect(loadConfig({}).ASMX_ALLOWED_IPS).toEqual([]);
  });

  it('takes DATABASE_READ_URL only beside DATABASE_URL, and DATABASE_READ_MAX_LAG as a duration (30 s by default)', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const primary = { DATABASE_URL: 'postgres://school@db1:5432/school', CODE_ENCRYPTION_KEY: key };
    const plain = loadConfig(primary);
    expect(plain.DATABASE_READ_URL).toBeUndefined();
    expect(plain.DATABASE_READ_MAX_LAG).toBe(30_000);
    expect(
      loadConfig({
        ...primary,
        DATABASE_READ_URL: 'postgres://school@db2:5432/school',
        DATABASE_READ_MAX_LAG: '2m',
      }),
    ).toMatchObject({
      DATABASE_READ_URL: 'postgres://school@db2:5432/school',
      DATABASE_READ_MAX_LAG: 120_000,
    });
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://school@db2:5432/school' })).toThrow(
      /DATABASE_READ_URL: needs DATABASE_URL/,
    );
    expect(() => loadConfig({ ...primary, DATABASE_READ_URL: 'mysql://db2/school' })).toThrow(
      /DATABASE_READ_URL: must be a PostgreSQL URL/,
    );
    expect(() => loadConfig({ ...primary, DATABASE_READ_URL: primary.DATABASE_URL })).toThrow(
      /DATABASE_READ_URL: is DATABASE_URL/,
    );
    expect(() => loadConfig({ ...primary, DATABASE_READ_MAX_LAG: '500ms' })).toThrow(
      /DATABASE_READ_MAX_LAG: must be at least 1s/,
    );
  });

  describe('derived values', () => {
    it('lanes of 200 SMS and 32 pushes, and a lease of 3 provider timeouts and 5 s, by default', () => {
      expect(loadConfig({})).toMatchObject({
        smsConcurrency: 200,
        pushConcurrency: 32,
        deliveryLeaseMs: 35_000,
      });
      // An empty value is unset.
      expect(loadConfig({ SMS_CONCURRENCY: '', DISPATCH_CONCURRENCY: ' ' })).toMatchObject({
        smsConcurrency: 200,
        pushConcurrency: 32,
      });
    });

    it('SMS_CONCURRENCY and PUSH_CONCURRENCY set their own lane', () => {
      expect(loadConfig({ SMS_CONCURRENCY: '64' })).toMatchObject({
        smsConcurrency: 64,
        pushConcurrency: 32,
      });
      expect(loadConfig({ PUSH_CONCURRENCY: '8' })).toMatchObject({
        smsConcurrency: 200,
        pushConcurrency: 8,
      });
    });

    it('DISPATCH_CONCURRENCY sets both lanes, where their own variable is not set', () => {
      expect(loadConfig({ DISPATCH_CONCURRENCY: '16' })).toMatchObject({
        smsConcurrency: 16,
        pushConcurrency: 16,
      });
      expect(loadConfig({ DISPATCH_CONCURRENCY: '16', SMS_CONCURRENCY: '300' })).toMatchObject({
        smsConcurrency: 300,
        pushConcurrency: 16,
      });
      expect(loadConfig({ DISPATCH_CONCURRENCY: '16', PUSH_CONCURRENCY: '4' })).toMatchObject({
        smsConcurrency: 16,
        pushConcurrency: 4,
      });
      expect(
        loadConfig({ DISPATCH_CONCURRENCY: '16', SMS_CONCURRENCY: '300', PUSH_CONCURRENCY: '4' }),
      ).toMatchObject({ smsConcurrency: 300, pushConcurrency: 4 });
    });

    it('the lease follows PROVIDER_TIMEOUT_MS', () => {
      expect(loadConfig({ PROVIDER_TIMEOUT_MS: '2000' }).deliveryLeaseMs).toBe(11_000);
      expect(loadConfig({ PROVIDER_TIMEOUT_MS: '120000' }).deliveryLeaseMs).toBe(365_000);
    });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['SERVICE_NAMESPACE', 'not a uri'],
    ['PUBLIC_BASE_URL', 'ftp://x'],
    ['MAX_BODY_BYTES', '-1'],
    ['ASMX_MAX_BODY_BYTES', '1023'],
    ['ASMX_MAX_BODY_BYTES', '64k'],
    ['LOG_LEVEL', 'loud'],
    ['DEFAULT_PHONE_REGION', 'XX'],
    ['TRUST_PROXY', 'maybe'],
    ['ASMX_ALLOWED_IPS', '203.0.113.0/24, 2001:db8::/129'],
    ['ASMX_ALLOWED_IPS', '10.0.0.0/33'],
    ['ASMX_ALLOWED_IPS', '203.0.113.07'],
    ['SMS_CONCURRENCY', '0'],
    ['DISPATCH_CONCURRENCY', '2000'],
  ])('refuses %s=%s with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration:\\n  ${name}: `));
  });
});
