import { AUDIT_ACTION_LABELS, AUDIT_ACTIONS, type User } from '@school/contract';
import { z } from 'zod';
import { SelectField, TextField } from '../../../components/ui/form';
import { applyChoice, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { isoToLocalInput, localInputToIso } from '../../../lib/datetime-local';
import type { AuditFilters } from '../utils/filters';

const localDateTime = z
  .string()
  .refine((value) => value === '' || localInputToIso(value) !== undefined, 'Enter a date and time.');

const filtersFormSchema = z
  .object({
    user: z.string().max(64, 'At most 64 characters.'),
    action: z.enum(['', ...AUDIT_ACTIONS]),
    from: localDateTime,
    to: localDateTime,
  })
  .refine((v) => !v.from || !v.to || new Date(v.from) < new Date(v.to), {
    path: ['to'],
    message: '“To” must be after “From”.',
  });
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const actionOptions = [
  { value: '', label: 'Any' },
  ...AUDIT_ACTIONS.map((action) => ({ value: action, label: AUDIT_ACTION_LABELS[action] })),
];

const toFormValues = (filters: AuditFilters): FiltersFormValues => ({
  user: filters.user ?? '',
  action: filters.action ?? '',
  from: isoToLocalInput(filters.from),
  to: isoToLocalInput(filters.to),
});

function toFilters(values: z.output<typeof filtersFormSchema>): AuditFilters {
  const filters: AuditFilters = {
    user: values.user.trim() || undefined,
    action: values.action || undefined,
    from: localInputToIso(values.from),
    to: localInputToIso(values.to),
  };
  return Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) as AuditFilters;
}

/**
 * Who, what and when. The user and the action apply by themselves; the times with Enter or Apply.
 * The parent keeps them in the URL.
 */
export function FiltersForm({
  filters,
  onChange,
  users,
}: {
  filters: AuditFilters;
  onChange: (filters: AuditFilters) => void;
  /** Staff to pick from, by display name and username. */
  users: readonly User[];
}) {
  const userOptions = [
    { value: '', label: 'Anyone' },
    ...[...users]
      .sort((a, b) => a.displayName.localeCompare(b.displayName))
      .map((u) => ({ value: u.username, label: `${u.displayName} (${u.username})` })),
    // A name in the URL that is no user's (a failed login's, as typed): still a choice.
    ...(filters.user && !users.some((u) => u.username === filters.user?.toLowerCase())
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
      <SelectField name="user" label="User" options={userOptions} registerOptions={applyChoice} />
      <SelectField name="action" label="Action" options={actionOptions} registerOptions={applyChoice} />
      <TextField name="from" label="From" type="datetime-local" />
      <TextField name="to" label="To" type="datetime-local" />
    </UrlFiltersForm>
  );
}
