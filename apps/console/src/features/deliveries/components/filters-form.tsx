import { DELIVERY_KINDS, DELIVERY_STATUSES } from '@school/contract';
import { z } from 'zod';
import { SelectField } from '../../../components/ui/form';
import { applyNow, UrlFiltersForm } from '../../../components/ui/url-filters-form';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import type { DeliveryFilters } from '../../../lib/query-keys';

const filtersFormSchema = z.object({
  status: z.enum(['', ...DELIVERY_STATUSES]),
  kind: z.enum(['', ...DELIVERY_KINDS]),
});
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const any = { value: '', label: 'Any' };
const statusOptions = [
  any,
  ...DELIVERY_STATUSES.map((s) => ({ value: s, label: DELIVERY_STATUS_LABELS[s] })),
];
const kindOptions = [any, ...DELIVERY_KINDS.map((k) => ({ value: k, label: DELIVERY_KIND_LABELS[k] }))];

const toFormValues = (filters: DeliveryFilters): FiltersFormValues => ({
  status: filters.status ?? '',
  kind: filters.kind ?? '',
});

function toFilters(values: z.output<typeof filtersFormSchema>): DeliveryFilters {
  return {
    ...(values.status ? { status: values.status } : {}),
    ...(values.kind ? { kind: values.kind } : {}),
  };
}

/** Status and kind; a choice applies at once. The parent keeps them in the URL. */
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
    >
      <SelectField name="status" label="Status" options={statusOptions} registerOptions={applyNow} />
      <SelectField name="kind" label="Kind" options={kindOptions} registerOptions={applyNow} />
    </UrlFiltersForm>
  );
}
