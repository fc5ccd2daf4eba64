import type { CallFilters } from '@school/contract';
import { apiPath } from '../../../lib/api-client';

export type ExportFormat = 'csv' | 'json';

/**
 * GET /api/calls/export: a download (Content-Disposition: attachment) of every call the filters
 * match, so it is a link the browser follows, not a fetch.
 */
export const exportCallsUrl = (format: ExportFormat, filters: CallFilters): string =>
  apiPath('/calls/export', { format, ...filters });
