import { DELIVERY_KINDS, DELIVERY_STATES, PROVIDER_NAMES, type ProviderName } from '@school/contract';
import { z } from 'zod';
import { SelectField, TextField } from '../../../components/ui/form';
import { fromBeforeTo, TimeRangeFields, timeRangeShape } from '../../../components/ui/time-range-fields';
import { applyChoice, filterChoices, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { isoToLocalInput, localInputToIso } from '../../../lib/datetime-local';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import type { DeliveryFilters } from '../../../lib/query-keys';
import { type UrlFiltersProps, withoutEmpty } from '../../../lib/url-filters';

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

const filtersFormSchema = z
  .object({
    status: z.enum(['', ...DELIVERY_STATES]),
    kind: z.enum(['', ...DELIVERY_KINDS]),
    provider: z.enum(['', ...PROVIDER_NAMES]),
    recipient: z.string().max(100, 'At most 100 characters.'),
    ...timeRangeShape,
  })
  .refine(...fromBeforeTo);
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const statusOptions = filterChoices(DELIVERY_STATES, DELIVERY_STATUS_LABELS);
const kindOptions = filterChoices(DELIVERY_KINDS, DELIVERY_KIND_LABELS);
const providerOptions = filterChoices(PROVIDER_NAMES, PROVIDER_LABELS);

const toFormValues = (filters: DeliveryFilters): FiltersFormValues => ({
  status: filters.status ?? '',
  kind: filters.kind ?? '',
  provider: filters.provider ?? '',
  recipient: filters.recipient ?? '',
  from: isoToLocalInput(filters.from),
  to: isoToLocalInput(filters.to),
});

function toFilters(values: FiltersFormValues): DeliveryFilters {
  return withoutEmpty({
    status: values.status || undefined,
    kind: values.kind || undefined,
    provider: values.provider || undefined,
    recipient: values.recipient.trim() || undefined,
    from: localInputToIso(values.from),
    to: localInputToIso(values.to),
  });
}

/**
 * The Deliveries filters. A choice in a list applies at once; typed fields apply with Enter or the
 * Apply button. The parent keeps them in the URL.
 */
export function FiltersForm({ filters, onChange }: UrlFiltersProps<DeliveryFilters>) {
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
      <SelectField
        name="provider"
        label="Provider"
        options={providerOptions}
        registerOptions={applyChoice}
        className="field-wide"
      />
      <TextField
        name="recipient"
        label="Recipient or topic"
        type="search"
        description="Part of a phone number or push topic, e.g. 07400 123456 or class-7B."
        autoComplete="off"
        spellCheck={false}
        className="field-wide"
      />
      <TimeRangeFields fromLabel="Queued from" toLabel="Queued before" />
    </UrlFiltersForm>
  );
}
