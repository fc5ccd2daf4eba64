import type { TextSearch } from '@school/contract';
import { formatDateTime } from '../../../lib/format';

/**
 * Said under the table when a free-text search ran out of time before it filled the page: how far
 * back it looked, and what to do (narrow the filters, or load more to carry on from there).
 */
export function SearchStopped({ search, found }: { search: TextSearch; found: number }) {
  const where = search.scannedBack
    ? `Searched back to calls from ${formatDateTime(search.scannedBack)}`
    : 'The search stopped';
  const what = found === 0 ? `${where} without finding a match yet.` : `${where} without filling the page.`;
  return (
    <p className="status search-stopped" role="note">
      {what} Narrow the search by time, operation or binding, or load more to keep searching.
    </p>
  );
}
