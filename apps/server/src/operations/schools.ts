import { ipAllowList } from '../net/ip-allow-list.js';
import type { SchoolRow, Store } from '../store/index.js';

/**
 * A school's base URL as stored: lower-case scheme and host, no default port, no query or
 * fragment, no trailing slash. Undefined when it is not an http(s) URL.
 */
export function normalizeBaseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** The ranges a school's `allowed_ips` column holds (comma-separated; null or empty: any caller). */
export const allowedRanges = (school: Pick<SchoolRow, 'allowed_ips'>): string[] =>
  school.allowed_ips
    ? school.allowed_ips
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean)
    : [];

/** The `allowed_ips` column for a list of ranges. */
export const allowedIpsColumn = (ranges: readonly string[]): string | null =>
  ranges.length > 0 ? ranges.join(',') : null;

/** Whether a caller may act for a school (its allowed ranges, if any). */
export function callerAllowed(school: Pick<SchoolRow, 'allowed_ips'>, callerIp: string): boolean {
  const ranges = allowedRanges(school);
  return ranges.length === 0 || ipAllowList(ranges)(callerIp);
}

export type SchoolLookup =
  | { readonly ok: true; readonly school: SchoolRow }
  | {
      readonly ok: false;
      readonly status: 400 | 403;
      readonly param?: 'baseUrlSchool';
      readonly message: string;
    };

/** The registered school a caller names, if it exists and the caller may act for it. */
export async function findSchoolFor(
  store: Store,
  baseUrlSchool: string,
  callerIp: string,
): Promise<SchoolLookup> {
  const normalized = normalizeBaseUrl(baseUrlSchool);
  const school = normalized ? await store.schools.findByBaseUrl(normalized) : undefined;
  if (!school) {
    return {
      ok: false,
      status: 400,
      param: 'baseUrlSchool',
      message: `Unknown school: ${baseUrlSchool.slice(0, 200)}. Register it in the console.`,
    };
  }
  if (!callerAllowed(school, callerIp)) {
    return {
      ok: false,
      status: 403,
      message: `Caller ${callerIp} is not allowed to send for the school ${school.name}.`,
    };
  }
  return { ok: true, school };
}
