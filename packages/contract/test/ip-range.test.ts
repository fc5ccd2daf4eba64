import { describe, expect, it } from 'vitest';
import { isIpRange, schoolInputSchema } from '../src/index.js';

describe('isIpRange', () => {
  it('takes an IPv4 or IPv6 address or CIDR range', () => {
    for (const text of [
      '203.0.113.7',
      '203.0.113.0/24',
      '0.0.0.0/0',
      '1.2.3.4/32',
      '2001:db8::1',
      '2001:DB8::/32',
      '::/0',
      '2001:db8::/128',
    ]) {
      expect(isIpRange(text), text).toBe(true);
    }
  });

  it('refuses anything else, prefixes beyond the family included', () => {
    for (const text of [
      '',
      'abc',
      '10.0.0.300',
      '1.2.3',
      '01.2.3.4',
      '1.2.3.4/33',
      '1.2.3.4/',
      '1.2.3.4/24/1',
      '2001:db8::/129',
      '2001:db8::/200',
      '1::2::3',
      '1:2',
      ' 1.2.3.4',
    ]) {
      expect(isIpRange(text), text).toBe(false);
    }
  });

  it('is the rule of a school’s allowed IPs, after trimming, with a message a person can act on', () => {
    const school = { name: 'North', baseUrl: 'https://north.example.org', topicKey: 'north' };
    expect(schoolInputSchema.parse({ ...school, allowedIps: [' 203.0.113.0/24 '] }).allowedIps).toEqual([
      '203.0.113.0/24',
    ]);
    const refused = schoolInputSchema.safeParse({
      ...school,
      allowedIps: ['203.0.113.0/24', '2001:db8::/129'],
    });
    expect(refused.error?.issues.map((i) => [i.path, i.message])).toEqual([
      [['allowedIps', 1], 'Not an IP address or CIDR range (e.g. 203.0.113.0/24).'],
    ]);
  });
});
