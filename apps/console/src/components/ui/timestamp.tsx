import { useNow } from '../../lib/clock';
import { formatClock, formatDateTime, formatRelative, formatUtcExact } from '../../lib/format';
import { useTimeZoneSetting } from '../../lib/time-zone';

export interface TimestampProps {
  readonly iso: string;
  /**
   * `recent` (default): "3 min ago" within a day of now, else the date and time with its zone.
   * `clock`: the time to read down a list and compare ("08:05:12", the date on earlier days), with
   * "3 min ago" after it, quieter (History, calls, deliveries). `absolute`: always the full date
   * and time (Audit, where "3 min ago" on several rows would say less).
   */
  readonly variant?: 'recent' | 'clock' | 'absolute';
  /** A time to come (a next attempt, an expiry): "in 5 min". Otherwise a time ahead is "just now". */
  readonly due?: boolean;
}

/** A moment, as a `<time>`, kept up to date; the exact UTC time on hover. */
export function Timestamp({ iso, variant = 'recent', due = false }: TimestampProps) {
  const zone = useTimeZoneSetting();
  const now = useNow();
  const relative = formatRelative(iso, now, { past: !due });
  if (variant === 'clock') {
    return (
      <span className="timestamp">
        <time dateTime={iso} title={formatUtcExact(iso)}>
          {formatClock(iso, now, zone)}
        </time>
        {relative ? <span className="muted timestamp-relative"> · {relative}</span> : null}
      </span>
    );
  }
  return (
    <time dateTime={iso} title={formatUtcExact(iso)}>
      {variant === 'recent' ? (relative ?? formatDateTime(iso, zone)) : formatDateTime(iso, zone)}
    </time>
  );
}
