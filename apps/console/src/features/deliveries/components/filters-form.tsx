import { DELIVERY_STATUSES } from '@school/contract';
import { type ChangeEvent, useEffect } from 'react';
import { useFormContext } from 'react-hook-form';
import { z } from 'zod';
import { Form, SelectField } from '../../../components/ui/form';
import { DELIVERY_KIND_LABELS, DELIVERY_STATUS_LABELS } from '../../../lib/format';
import type { DeliveryFilters } from '../../../lib/query-keys';

const filtersFormSchema = z.object({
  status: z.enum(['', ...DELIVERY_STATUSES]),
  kind: z.enum(['', 'sms', 'push']),
});
type FiltersFormValues = z.input<typeof filtersFormSchema>;

const any = { value: '', label: 'Any' };
const statusOptions = [
  any,
  ...DELIVERY_STATUSES.map((s) => ({ value: s, label: DELIVERY_STATUS_LABELS[s] })),
];
const kindOptions = [
  any,
  ...(['sms', 'push'] as const).map((k) => ({ value: k, label: DELIVERY_KIND_LABELS[k] })),
];

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

/** Puts the URL's filters back in the lists when the URL changes by other means (back, a count link). */
function SyncWithUrl({ values }: { values: FiltersFormValues }) {
  const { reset } = useFormContext<FiltersFormValues>();
  const key = JSON.stringify(values);
  useEffect(() => {
    reset(JSON.parse(key) as FiltersFormValues);
  }, [key, reset]);
  return null;
}

/** Status and kind; a choice applies at once. The parent keeps them in the URL. */
export function FiltersForm({
  filters,
  onChange,
}: {
  filters: DeliveryFilters;
  onChange: (filters: DeliveryFilters) => void;
}) {
  const applyNow = {
    onChange: (event: ChangeEvent<HTMLSelectElement>) => event.target.form?.requestSubmit(),
  };
  return (
    <Form
      schema={filtersFormSchema}
      options={{ defaultValues: toFormValues(filters) }}
      onSubmit={(values) => onChange(toFilters(values))}
      role="search"
      aria-label="Filter deliveries"
      className="filters"
    >
      {() => (
        <>
          <SyncWithUrl values={toFormValues(filters)} />
          <SelectField name="status" label="Status" options={statusOptions} registerOptions={applyNow} />
          <SelectField name="kind" label="Kind" options={kindOptions} registerOptions={applyNow} />
          <div className="actions filters-actions">
            <button type="button" className="button" onClick={() => onChange({})}>
              Clear filters
            </button>
          </div>
        </>
      )}
    </Form>
  );
}
