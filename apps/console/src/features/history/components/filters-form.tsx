import {
  BINDING_LABELS,
  BINDINGS,
  CALL_DELIVERY_FILTERS,
  type CallFilters,
  OUTCOMES,
  operations,
  UNKNOWN_OPERATION,
} from '@school/contract';
import { z } from 'zod';
import { SelectField, TextField } from '../../../components/ui/form';
import { fromBeforeTo, TimeRangeFields, timeRangeShape } from '../../../components/ui/time-range-fields';
import { applyChoice, filterChoices, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { isoToLocalInput, localInputToIso } from '../../../lib/datetime-local';
import { type UrlFiltersProps, withoutEmpty } from '../../../lib/url-filters';

const filtersFormSchema = z
  .object({
    operation: z.string(),
    binding: z.string(),
    outcome: z.string(),
    delivery: z.string(),
    ...timeRangeShape,
    ip: z.string().max(64, 'At most 64 characters.'),
    phone: z.string().max(64, 'At most 64 characters.'),
    q: z.string().max(200, 'At most 200 characters.'),
  })
  .refine(...fromBeforeTo);
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const operationOptions = [
  ...filterChoices(operations.map((op) => op.name)),
  // Calls to an address or operation name the service does not have.
  { value: UNKNOWN_OPERATION, label: 'Unknown operation' },
];
const bindingOptions = filterChoices(BINDINGS, BINDING_LABELS);
// The words of the outcome badges, with the status class the Dashboard counts by.
const OUTCOME_CHOICES: Record<(typeof OUTCOMES)[number], string> = {
  ok: 'OK',
  'client-error': 'Refused (client error)',
  'server-error': 'Failed (server error)',
};
const outcomeOptions = filterChoices(OUTCOMES, OUTCOME_CHOICES);
// The call was answered, but did its SMS or push leave? Dead or expired: it did not, and will not.
const deliveryOptions = filterChoices(CALL_DELIVERY_FILTERS, { failed: 'Failed (dead or expired)' });

function toFormValues(filters: CallFilters): FiltersFormValues {
  return {
    operation: filters.operation ?? '',
    binding: filters.binding ?? '',
    outcome: filters.outcome ?? '',
    delivery: filters.delivery ?? '',
    from: isoToLocalInput(filters.from),
    to: isoToLocalInput(filters.to),
    ip: filters.ip ?? '',
    phone: filters.phone ?? '',
    q: filters.q ?? '',
  };
}

function toFilters(values: FiltersFormValues): CallFilters {
  return withoutEmpty({
    operation: values.operation || undefined,
    binding: values.binding || undefined,
    outcome: values.outcome || undefined,
    delivery: values.delivery === 'failed' ? 'failed' : undefined,
    from: localInputToIso(values.from),
    to: localInputToIso(values.to),
    ip: values.ip.trim() || undefined,
    phone: values.phone.trim() || undefined,
    q: values.q.trim() || undefined,
  });
}

/**
 * The History filters. A choice in a list applies at once; typed fields apply with Enter or the
 * Apply button (a request per keystroke would be noise). The parent keeps them in the URL.
 */
export function FiltersForm({ filters, onChange }: UrlFiltersProps<CallFilters>) {
  return (
    <UrlFiltersForm
      schema={filtersFormSchema}
      values={toFormValues(filters)}
      onSubmit={(values) => onChange(toFilters(values))}
      onClear={() => onChange({})}
      label="Filter calls"
      apply
    >
      <SelectField
        name="operation"
        label="Operation"
        options={operationOptions}
        registerOptions={applyChoice}
      />
      <SelectField name="binding" label="Protocol" options={bindingOptions} registerOptions={applyChoice} />
      <SelectField name="outcome" label="Outcome" options={outcomeOptions} registerOptions={applyChoice} />
      <SelectField name="delivery" label="Delivery" options={deliveryOptions} registerOptions={applyChoice} />
      <TimeRangeFields />
      <TextField name="ip" label="Caller IP" autoComplete="off" spellCheck={false} />
      <TextField
        name="phone"
        label="Phone"
        type="tel"
        description="A parent's number: the codes asked for it."
        autoComplete="off"
      />
      <TextField
        name="q"
        label="Text"
        type="search"
        description="In parameters, raw bodies, errors and notes."
        autoComplete="off"
        className="field-wide"
      />
    </UrlFiltersForm>
  );
}
