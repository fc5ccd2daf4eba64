import { describe, expect, it } from 'vitest';
import { ipAllowList } from '../src/net/ip-allow-list.js';

// ASMX_ALLOWED_IPS and a school's allowed callers. A dual-stack socket reports an IPv4 caller as
// an IPv4-mapped IPv6 address (`::ffff:203.0.113.41`): it must be read as the IPv4 address it is,
// in whichever notation it comes, and nothing else may pass for one.

describe('ipAllowList', () => {
  const allowed = ipAllowList(['203.0.113.0/24', '192.0.2.9', '2001:db8::/32']);

  it('lets in IPv4 callers inside a range or equal to an address, and no one else', () => {
    expect(allowed('203.0.113.0')).toBe(true);
    expect(allowed('203.0.113.41')).toBe(true);
    expect(allowed('203.0.113.255')).toBe(true);
    expect(allowed('192.0.2.9')).toBe(true);
    expect(allowed('203.0.114.0')).toBe(false);
    expect(allowed('203.0.112.255')).toBe(false);
    expect(allowed('192.0.2.10')).toBe(false);
  });

  it('lets in IPv6 callers inside an IPv6 range, in any notation', () => {
    expect(allowed('2001:db8::1')).toBe(true);
    expect(allowed('2001:DB8:ffff::1')).toBe(true);
    expect(allowed('2001:0db8:0000:0000:0000:0000:0000:0001')).toBe(true);
    expect(allowed('2001:db9::1')).toBe(false);
    expect(allowed('::1')).toBe(false);
  });

  it('reads an IPv4-mapped IPv6 caller as its IPv4 address, dotted or in hex, any case', () => {
    expect(allowed('::ffff:203.0.113.41')).toBe(true);
    expect(allowed('::ffff:192.0.2.9')).toBe(true);
    // 203.0.113.41 is cb00:7129 in hex.
    expect(allowed('::ffff:cb00:7129')).toBe(true);
    expect(allowed('::FFFF:203.0.113.41')).toBe(true);
    expect(allowed('0:0:0:0:0:ffff:203.0.113.41')).toBe(true);
    // Mapped addresses outside the IPv4 ranges stay outside.
    expect(allowed('::ffff:203.0.114.1')).toBe(false);
    expect(allowed('::ffff:192.0.2.10')).toBe(false);
    expect(allowed('::ffff:cb00:7201')).toBe(false);
  });

  it('lets an IPv4 caller in through an IPv4-mapped IPv6 range', () => {
    const mapped = ipAllowList(['::ffff:198.51.100.0/120']);
    expect(mapped('198.51.100.7')).toBe(true);
    expect(mapped('::ffff:198.51.100.7')).toBe(true);
    expect(mapped('198.51.101.7')).toBe(false);
  });

  it('does not take other IPv6 addresses that contain an IPv4 address for one', () => {
    // IPv4-compatible (deprecated), and a prefix that only looks like the mapped one.
    expect(allowed('::203.0.113.41')).toBe(false);
    expect(allowed('::ffff:0:203.0.113.41')).toBe(false);
    expect(allowed('64:ff9b::203.0.113.41')).toBe(false);
    // "Every IPv4 address" takes IPv4-mapped callers, and no other IPv6 ones.
    const anyV4 = ipAllowList(['0.0.0.0/0']);
    expect(anyV4('2001:db8::1')).toBe(false);
    expect(anyV4('::ffff:1.2.3.4')).toBe(true);
  });

  it('refuses what is not an IP address', () => {
    for (const caller of [
      '',
      'unknown',
      'localhost',
      '203.0.113',
      '::ffff:',
      '::ffff:203.0.113',
      '::ffff:999.0.113.1',
    ])
      expect(allowed(caller), caller).toBe(false);
  });

  it('lets no one in with an empty list', () => {
    const none = ipAllowList([]);
    expect(none('203.0.113.41')).toBe(false);
    expect(none('::ffff:203.0.113.41')).toBe(false);
  });
});
