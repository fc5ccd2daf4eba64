import { DELIVERY_KINDS, DELIVERY_STATES, PROVIDER_NAMES, type ProviderName } from '@school/contract';
import { z } from 'zod';
import { SelectField, TextField } from '../../../components/ui/form';
import { applyChoice, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { isoToLocalInput, localInputToIso } from '../../../lib/datetime-local';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import type { DeliveryFilters } from '../../../lib/query-keys';

/** The providers as staff know them, the configuration's name beside. */
export const PROVIDER_LABELS: Record<ProviderName, string> = {
  log: 'Log only, nothing sent (log)',
  twilio: 'Twilio (twilio)',
  http: 'SMS gateway (http)',
  'twilio-fallback': 'Twilio, as fallback (twilio-fallback)',
  'http-fallback': 'Fallback SMS gateway (http-fallback)',
  fcm: 'Firebase Cloud Messaging (fcm)',
  webhook: 'Webhook (webhook)',
};

const localDateTime = z
  .string()
  .refine((value) => value === '' || localInputToIso(value) !== undefined, 'Enter a date and time.');

const filtersFormSchema = z
  .object({
    status: z.enum(['', ...DELIVERY_STATES]),
    kind: z.enum(['', ...DELIVERY_KINDS]),
    provider: z.enum(['', ...PROVIDER_NAMES]),
    recipient: z.string().max(100, 'At most 100 characters.'),
    from: localDateTime,
    to: localDateTime,
  })
  .refine((v) => !v.from || !v.to || new Date(v.from) < new Date(v.to), {
    path: ['to'],
    message: '“To” must be after “From”.',
  });
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const any = { value: '', label: 'Any' };
const statusOptions = [any, ...DELIVERY_STATES.map((s) => ({ value: s, label: DELIVERY_STATUS_LABELS[s] }))];
const kindOptions = [any, ...DELIVERY_KINDS.map((k) => ({ value: k, label: DELIVERY_KIND_LABELS[k] }))];
const providerOptions = [any, ...PROVIDER_NAMES.map((p) => ({ value: p, label: PROVIDER_LABELS[p] }))];

const toFormValues = (filters: DeliveryFilters): FiltersFormValues => ({
  status: filters.status ?? '',
  kind: filters.kind ?? '',
  provider: filters.provider ?? '',
  recipient: filters.recipient ?? '',
  from: isoToLocalInput(filters.from),
  to: isoToLocalInput(filters.to),
});

function toFilters(values: FiltersFormValues): DeliveryFilters {
  const filters: Record<string, string | undefined> = {
    status: values.status || undefined,
    kind: values.kind || undefined,
    provider: values.provider || undefined,
    recipient: values.recipient.trim() || undefined,
    from: localInputToIso(values.from),
    to: localInputToIso(values.to),
  };
  return Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) as DeliveryFilters;
}

/**
 * The Deliveries filters. A choice in a list applies at once; typed fields apply with Enter or the
 * Apply button. The parent keeps them in the URL.
 */
export function FiltersForm({
  filters,
  onChange,
}: {
  filters: DeliveryFilters;
  onChange: (filters: DeliveryFilters) => void;
}) {
  return (
    <UrlFiltersForm
      schema={filtersFormSchema}
      values={toFormValues(filters)}
      onSubmit={(values) => onChange(toFilters(values))}
      onClear={() => onChange({})}
      label="Filter deliveries"
      apply
    >
      <SelectField name="status" label="Status" options={statusOptions} registerOptions={applyChoice} />
      <SelectField name="kind" label="Kind" options={kindOptions} registerOptions={applyChoice} />
      <SelectField name="provider" label="Provider" options={providerOptions} registerOptions={applyChoice} />
      <TextField
        name="recipient"
        label="Recipient or topic"
        type="search"
        description="Part of a phone number or push topic, e.g. 07911 123456 or class-7B."
        autoComplete="off"
        spellCheck={false}
        className="field-wide"
      />
      <TextField name="from" label="Queued from" type="datetime-local" />
      <TextField name="to" label="Queued before" type="datetime-local" />
    </UrlFiltersForm>
  );
}
