import { Link, type LinkProps } from 'react-router';
import { paths } from '../../config/paths';

/**
 * A link to a call's or a delivery's page, shown as `#12` and read as "Call #12" (the word is for
 * screen readers: the column's heading says it to the eye). Other props go to the Link (the list's
 * filters as its `state`, a `data-record`).
 */
export function RecordLink({
  record,
  id,
  ...link
}: { record: 'call' | 'delivery'; id: number } & Omit<LinkProps, 'to' | 'id'> & { 'data-record'?: number }) {
  return (
    <Link to={paths[record].href(id)} {...link}>
      <span className="visually-hidden">{record === 'call' ? 'Call' : 'Delivery'}</span> #{id}
    </Link>
  );
}
