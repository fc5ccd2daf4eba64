import { useNow } from '../../lib/clock';
import { formatDateTime, formatRelative, formatUtcExact } from '../../lib/format';
import { useTimeZoneSetting } from '../../lib/time-zone';

/**
 * A moment, as a `<time>`: relative when within a day of now ("3 min ago", kept up to date),
 * otherwise the date and time with its zone's name (local or UTC, as the reader chose in their
 * menu); the exact UTC time on hover. `absolute`: always the date and time, for a record read and
 * compared entry by entry (Audit), where "3 min ago" on several rows would say less.
 */
export function Timestamp({ iso, absolute = false }: { iso: string; absolute?: boolean }) {
  return absolute ? <AbsoluteTime iso={iso} /> : <RecentTime iso={iso} />;
}

function AbsoluteTime({ iso }: { iso: string }) {
  const zone = useTimeZoneSetting();
  return (
    <time dateTime={iso} title={formatUtcExact(iso)}>
      {formatDateTime(iso, zone)}
    </time>
  );
}

function RecentTime({ iso }: { iso: string }) {
  const zone = useTimeZoneSetting();
  const now = useNow();
  return (
    <time dateTime={iso} title={formatUtcExact(iso)}>
      {formatRelative(iso, now) ?? formatDateTime(iso, zone)}
    </time>
  );
}
