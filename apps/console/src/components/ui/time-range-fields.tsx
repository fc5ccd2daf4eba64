import { z } from 'zod';
import { localInputToIso } from '../../lib/datetime-local';
import { TextField } from './form';

// The time range of a list's filters (History, Deliveries, Audit): two `datetime-local` fields in
// the reader's time zone; the URL holds them as ISO instants (lib/datetime-local.ts converts).

/** A time filter's field: empty, or a time (the form is noValidate: the schema checks it). */
const localDateTime = z
  .string()
  .refine((value) => value === '' || localInputToIso(value) !== undefined, 'Enter a date and time.');

/** `from` and `to` for a filters form's schema: spread in, then `.refine(...fromBeforeTo)`. */
export const timeRangeShape = { from: localDateTime, to: localDateTime };

/** The check that the range is not empty or backwards: its message goes under To. */
export const fromBeforeTo: [
  (values: { from: string; to: string }) => boolean,
  { path: PropertyKey[]; message: string },
] = [
  (v) => !v.from || !v.to || new Date(v.from) < new Date(v.to),
  { path: ['to'], message: '“To” must be after “From”.' },
];

/** The From and To fields of `timeRangeShape`. */
export function TimeRangeFields({
  fromLabel = 'From',
  toLabel = 'To',
}: {
  fromLabel?: string;
  toLabel?: string;
}) {
  return (
    <>
      <TextField name="from" label={fromLabel} type="datetime-local" />
      <TextField name="to" label={toLabel} type="datetime-local" />
    </>
  );
}
