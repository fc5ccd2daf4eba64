import { ipAllowList } from '../net/ip-allow-list.js';
import type { SchoolRow, Store } from '../store/index.js';
import type { CallContext } from './types.js';

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

/**
 * The registered school a call names, if it exists and whoever calls may act for it: a caller of
 * the `.asmx` doors from the school's `allowedIps`; staff sending from the console (`staff` set)
 * whatever their address — staff are not callers, the ranges restrict the school's servers — but
 * only for their own schools when they are limited to some, and only the school they picked when
 * they picked one.
 */
export async function findSchoolFor(
  store: Store,
  baseUrlSchool: string,
  context: Pick<CallContext, 'callerIp' | 'staff' | 'staffSchoolIds' | 'actingForSchoolId'>,
): Promise<SchoolLookup> {
  const { callerIp } = context;
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
  if (context.staff === undefined) {
    if (!callerAllowed(school, callerIp)) {
      return {
        ok: false,
        status: 403,
        message: `Caller ${callerIp} is not allowed to send for the school ${school.name}.`,
      };
    }
    return { ok: true, school };
  }
  if (context.staffSchoolIds && !context.staffSchoolIds.includes(school.id)) {
    return {
      ok: false,
      status: 403,
      param: 'baseUrlSchool',
      message: `You may not send for ${school.base_url}: your account is limited to other schools.`,
    };
  }
  if (context.actingForSchoolId != null && context.actingForSchoolId !== school.id) {
    return {
      ok: false,
      status: 400,
      param: 'baseUrlSchool',
      message: `baseUrlSchool names ${school.name}, not the school picked: pick ${school.name}, or change baseUrlSchool.`,
    };
  }
  return { ok: true, school };
}
