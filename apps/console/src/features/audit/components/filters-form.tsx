import { AUDIT_ACTION_LABELS, AUDIT_ACTIONS, type User } from '@school/contract';
import { z } from 'zod';
import { SelectField } from '../../../components/ui/form';
import { fromBeforeTo, TimeRangeFields, timeRangeShape } from '../../../components/ui/time-range-fields';
import { applyChoice, filterChoices, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { isoToLocalInput, localInputToIso } from '../../../lib/datetime-local';
import { type UrlFiltersProps, withoutEmpty } from '../../../lib/url-filters';
import type { AuditFilters } from '../utils/filters';

const filtersFormSchema = z
  .object({
    user: z.string().max(64, 'At most 64 characters.'),
    action: z.enum(['', ...AUDIT_ACTIONS]),
    ...timeRangeShape,
  })
  .refine(...fromBeforeTo);
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const actionOptions = filterChoices(AUDIT_ACTIONS, AUDIT_ACTION_LABELS);

const toFormValues = (filters: AuditFilters): FiltersFormValues => ({
  user: filters.user ?? '',
  action: filters.action ?? '',
  from: isoToLocalInput(filters.from),
  to: isoToLocalInput(filters.to),
});

function toFilters(values: z.output<typeof filtersFormSchema>): AuditFilters {
  return withoutEmpty({
    user: values.user.trim() || undefined,
    action: values.action || undefined,
    from: localInputToIso(values.from),
    to: localInputToIso(values.to),
  });
}

/**
 * Who, what and when. The user and the action apply by themselves; the times with Enter or Apply.
 * The parent keeps them in the URL.
 */
export function FiltersForm({
  filters,
  onChange,
  users,
}: UrlFiltersProps<AuditFilters> & {
  /** Staff to pick from, by display name and username; undefined: one's own actions only, no choice. */
  users: readonly User[] | undefined;
}) {
  const userOptions = [
    { value: '', label: 'Anyone' },
    ...[...(users ?? [])]
      .sort((a, b) => a.displayName.localeCompare(b.displayName))
      .map((u) => ({ value: u.username, label: `${u.displayName} (${u.username})` })),
    // A name in the URL that is no user's (a failed login's, as typed): still a choice.
    ...(filters.user && !(users ?? []).some((u) => u.username === filters.user?.toLowerCase())
      ? [{ value: filters.user, label: `${filters.user} (no such user)` }]
      : []),
  ];
  return (
    <UrlFiltersForm
      schema={filtersFormSchema}
      values={toFormValues(filters)}
      onSubmit={(values) => onChange(toFilters(values))}
      onClear={() => onChange({})}
      label="Filter the audit log"
      apply
    >
      {users ? (
        <SelectField name="user" label="User" options={userOptions} registerOptions={applyChoice} />
      ) : null}
      <SelectField name="action" label="Action" options={actionOptions} registerOptions={applyChoice} />
      <TimeRangeFields />
    </UrlFiltersForm>
  );
}
