import { useState } from 'react';
import { Link } from 'react-router';
import { type ChartData, formatCount } from '../utils/chart-data';
import { type Bucket, bucketLabel } from '../utils/time-axis';

export interface FiguresColumn {
  readonly label: string;
  readonly values: readonly (number | null)[];
  readonly format?: (value: number) => string;
  /** Where the figure of bucket `i` is listed (History, Deliveries); none: plain text. */
  readonly href?: (i: number) => string | undefined;
}

/**
 * A chart's figures as a table, one row per bucket that had any, each figure a link to the
 * matching list: what the chart shows, for the keyboard and screen readers, and a way to the calls
 * behind a bar without aiming at it. Built only when opened (a month by hour is 720 rows).
 */
export function FiguresTable({
  data,
  bucket,
  caption,
  columns,
}: {
  data: ChartData;
  bucket: Bucket;
  caption: string;
  columns: readonly FiguresColumn[];
}) {
  const [open, setOpen] = useState(false);
  const rows = data.x
    .map((_, i) => i)
    .filter((i) => columns.some((c) => (c.values[i] ?? 0) !== 0))
    .reverse();
  return (
    <details className="figures" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Show the figures</summary>
      {open ? (
        rows.length === 0 ? (
          <p className="muted">Nothing to show in this period.</p>
        ) : (
          <div className="table-wrap">
            <table className="figures-table cards">
              <caption className="visually-hidden">{caption}, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">{bucket === 'day' ? 'Day' : 'Hour'}</th>
                  {columns.map((c) => (
                    <th key={c.label} scope="col" className="numeric">
                      {c.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((i) => {
                  const when = bucketLabel(bucket, (data.x[i] ?? 0) * 1000);
                  const first = bucket === 'day' ? 'Day' : 'Hour';
                  return (
                    <tr key={i}>
                      <th scope="row" data-label={first}>
                        {when}
                      </th>
                      {columns.map((c) => {
                        const value = c.values[i] ?? null;
                        const text = value === null ? '–' : (c.format ?? formatCount)(value);
                        const href = value ? c.href?.(i) : undefined;
                        return (
                          <td key={c.label} className="numeric" data-label={c.label}>
                            {href ? (
                              <Link to={href}>
                                {text} <span className="visually-hidden">{`${c.label}, ${when}`}</span>
                              </Link>
                            ) : (
                              text
                            )}
                          </td>
                        );
                      })}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )
      ) : null}
    </details>
  );
}
