import { type PrivacyReport, privacyReportSchema } from '@school/contract';
import { useMutation } from '@tanstack/react-query';
import { apiPath, request } from '../../../lib/api-client';

/**
 * GET /api/privacy/report?phone=… (admins): everything held about a number, however it is typed;
 * a 400 when it is no phone number.
 */
export function getPrivacyReport(phone: string): Promise<PrivacyReport> {
  return request('/privacy/report', { schema: privacyReportSchema, query: { phone } });
}

/** The same report as a download (the browser follows the link): CSV or JSON. */
export const privacyReportUrl = (phone: string, format: 'csv' | 'json'): string =>
  apiPath('/privacy/report', { phone, format });

/**
 * A report is made when an admin asks for it, each time (the server audits every one), so it is a
 * mutation rather than a query: never fetched again behind the reader's back, never kept in the
 * cache once the page is left.
 */
export const useFindReport = () => useMutation({ mutationFn: getPrivacyReport });
