// `datetime-local` fields hold a time in the reader's zone; the API takes ISO instants.

const pad = (n: number) => String(n).padStart(2, '0');

/** An ISO instant as a `datetime-local` value, in the reader's time zone. */
export function isoToLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A `datetime-local` value (the reader's time zone) as an ISO instant; undefined when empty. */
export function localInputToIso(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
