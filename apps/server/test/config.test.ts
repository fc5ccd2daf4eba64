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

  it('reads ASMX_ALLOWED_IPS as a comma-separated list of addresses and ranges, IPv4 and IPv6', () => {
    expect(
      loadConfig({ ASMX_ALLOWED_IPS: ' 203.0.113.0/24, 2001:db8::/128,::ffff:198.51.100.0/120 ,, 192.0.2.9' })
        .ASMX_ALLOWED_IPS,
    ).toEqual(['203.0.113.0/24', '2001:db8::/128', '::ffff:198.51.100.0/120', '192.0.2.9']);
    expect(loadConfig({}).ASMX_ALLOWED_IPS).toEqual([]);
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['SERVICE_NAMESPACE', 'not a uri'],
    ['PUBLIC_BASE_URL', 'ftp://x'],
    ['MAX_BODY_BYTES', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['DEFAULT_PHONE_REGION', 'XX'],
    ['TRUST_PROXY', 'maybe'],
    ['ASMX_ALLOWED_IPS', '203.0.113.0/24, 2001:db8::/129'],
    ['ASMX_ALLOWED_IPS', '10.0.0.0/33'],
    ['ASMX_ALLOWED_IPS', '203.0.113.07'],
  ])('refuses %s=%s with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration:\\n  ${name}: `));
  });
});
