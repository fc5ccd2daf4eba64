import type { CallFilters } from '@school/contract';
import { Link } from 'react-router';
import { filtersToSearch } from '../utils/filters';

/**
 * Said above the calls when the search text was a phone number: the server looked for that
 * number's calls, as the Phone filter does. The same text in double quotes searches the calls'
 * text instead (the calls that only mention the number, or were recorded before calls kept it).
 */
export function PhoneSearched({ phone, filters }: { phone: string; filters: CallFilters }) {
  const asText = filtersToSearch({ ...filters, q: `"${filters.q ?? phone}"` });
  return (
    <p className="muted phone-searched">
      Searching for the phone number {phone}: the calls made for it.{' '}
      <Link to={{ search: asText.toString() }}>Search for it as text</Link>
    </p>
  );
}
