import { describe, expect, it } from 'vitest';
import { paths } from '../config/paths';
import { safeNextPath } from './next-path';

describe('safeNextPath', () => {
  it('keeps a path of the console, with its query and fragment', () => {
    expect(safeNextPath('/history?outcome=ok')).toBe('/history?outcome=ok');
    expect(safeNextPath('/deliveries/12#attempts')).toBe('/deliveries/12#attempts');
  });

  it('refuses anything that could lead to another site or back to the login', () => {
    for (const next of [
      null,
      '',
      'history',
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      '/.//evil.example/x',
      '/..//evil.example/x',
      '/%2e%2e//evil.example/x',
      '/%2E//evil.example/x',
      '/a/../..//evil.example/x',
      '/./\\evil.example',
      '/\t/evil.example',
      'javascript:alert(1)',
      '/login?next=/send',
      '/setup?token=x',
    ]) {
      expect(safeNextPath(next), String(next)).toBeNull();
    }
  });

  it('resolves dot segments that stay on the console', () => {
    expect(safeNextPath('/history/../deliveries?status=dead')).toBe('/deliveries?status=dead');
    expect(safeNextPath('/./service')).toBe('/service');
  });

  it('round-trips through the login address', () => {
    const href = paths.login.href('/history?outcome=ok');
    expect(href).toBe('/login?next=/history%3Foutcome%3Dok');
    expect(safeNextPath(new URL(href, 'http://x.test').searchParams.get('next'))).toBe('/history?outcome=ok');
  });
});
