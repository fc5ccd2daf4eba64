import { describe, expect, it } from 'vitest';
import { schoolInputSchema } from '../src/index.js';

// What a school's allowed callers (and the server's ASMX_ALLOWED_IPS, through the same rule) may
// be: an IP address or a CIDR range. Tested through the exported schema, not the helper behind it,
// so the table holds whichever validator the schema uses (a hand-written one or zod's). Every
// entry is one that a strict reading of RFC 4632 / RFC 4291 (and Node's `net.isIP`) agrees with.

const allowedIps = (entry: string) =>
  schoolInputSchema.safeParse({
    name: 'School',
    baseUrl: 'https://school.example.org',
    topicKey: 'school',
    allowedIps: [entry],
  });

const ACCEPTED = [
  // IPv4 addresses and ranges, prefixes 0 to 32
  '203.0.113.7',
  '0.0.0.0',
  '255.255.255.255',
  '10.0.0.0/8',
  '203.0.113.0/24',
  '203.0.113.7/32',
  '0.0.0.0/0',
  // IPv6 addresses, any case, compressed or not, with leading zeros inside a group
  '::1',
  '::',
  '2001:db8::7',
  '2001:DB8::7',
  '2001:0db8:0000:0000:0000:0000:0000:0007',
  'fe80::1:2:3:4',
  // IPv4-mapped IPv6 (how a dual-stack socket reports an IPv4 caller), as an address and a range
  '::ffff:203.0.113.7',
  '::ffff:203.0.113.0/120',
  // IPv6 ranges, prefixes 0 to 128
  '2001:db8::/32',
  '2001:db8::/64',
  '2001:db8::7/128',
  '::/0',
  'fe80::/10',
] as const;

const REFUSED = [
  // empty or not an address at all
  '',
  '   ',
  '/',
  '/24',
  'localhost',
  'school.example.org',
  '203.0.113.7:80',
  // IPv4 out of range, short, long, or with leading zeros (read as octal by some parsers)
  '256.0.0.1',
  '203.0.113.256',
  '203.0.113',
  '203.0.113.7.1',
  '203.0.113.07',
  '010.0.0.1',
  '203.0.113.-1',
  // IPv4 prefixes beyond 32, signed, empty or not a number, or a second slash
  '203.0.113.0/33',
  '10.0.0.0/64',
  '10.0.0.0/128',
  '10.0.0.0/999',
  '10.0.0.0/-1',
  '10.0.0.0/+8',
  '10.0.0.0/',
  '10.0.0.0/x',
  '10.0.0.0/8/8',
  // IPv6 prefixes beyond 128
  '2001:db8::/129',
  '2001:db8::/200',
  '::/999',
  '::ffff:203.0.113.0/129',
  '2001:db8::/',
  '2001:db8::/-1',
  // malformed IPv6
  '2001:db8::1::2',
  'gggg::1',
  '2001:db8::1::2/64',
] as const;

describe('IP addresses and CIDR ranges of allowed callers', () => {
  it.each(ACCEPTED)('accepts %j', (entry) => {
    expect(allowedIps(entry).success).toBe(true);
  });

  it.each(REFUSED)('refuses %j', (entry) => {
    const result = allowedIps(entry);
    expect(result.success).toBe(false);
    // The refusal is about the entry (allowedIps[0]), not another field.
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['allowedIps.0']);
  });

  it('trims an entry before reading it, and keeps the trimmed text', () => {
    const result = allowedIps('  203.0.113.0/24 ');
    expect(result.success).toBe(true);
    expect(result.data?.allowedIps).toEqual(['203.0.113.0/24']);
  });

  it('draws the IPv4 and IPv6 prefix limits exactly at 32 and 128', () => {
    for (let prefix = 0; prefix <= 140; prefix++) {
      expect(allowedIps(`198.51.100.0/${prefix}`).success, `IPv4 /${prefix}`).toBe(prefix <= 32);
      expect(allowedIps(`2001:db8::/${prefix}`).success, `IPv6 /${prefix}`).toBe(prefix <= 128);
    }
  });
});
