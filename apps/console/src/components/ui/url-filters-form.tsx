import { type ChangeEvent, type ReactNode, useEffect } from 'react';
import { type DefaultValues, type FieldValues, useFormContext } from 'react-hook-form';
import type { z } from 'zod';
import { Form } from './form';

/** `registerOptions` for a list whose choice applies at once: the choice submits the form. */
export const applyNow = {
  onChange: (event: ChangeEvent<HTMLSelectElement>) => event.target.form?.requestSubmit(),
};

/**
 * Puts the URL's filters back in the fields when the URL changes by other means (back, forward,
 * Clear, a count link). A reset rather than a remount, so focus stays where it was after Enter or a
 * choice.
 */
function SyncWithUrl({ values }: { values: FieldValues }) {
  const { reset } = useFormContext();
  const key = JSON.stringify(values);
  useEffect(() => {
    reset(JSON.parse(key) as FieldValues);
  }, [key, reset]);
  return null;
}

/**
 * A list page's filters, a search landmark. The parent keeps the filters in the URL: `values` are
 * its filters as the form's values, `onSubmit` gets the form's values, Clear filters calls `onClear`.
 * With `apply`, an "Apply filters" button for the typed fields (they also apply with Enter).
 */
export function UrlFiltersForm<S extends z.ZodType<FieldValues, FieldValues>>({
  schema,
  values,
  onSubmit,
  onClear,
  label,
  apply = false,
  children,
}: {
  schema: S;
  values: DefaultValues<z.input<S>>;
  onSubmit: (values: z.output<S>) => void;
  onClear: () => void;
  /** The search landmark's name, e.g. "Filter calls". */
  label: string;
  apply?: boolean;
  children: ReactNode;
}) {
  return (
    <Form
      schema={schema}
      options={{ defaultValues: values }}
      onSubmit={onSubmit}
      role="search"
      aria-label={label}
      className="filters"
    >
      {() => (
        <>
          <SyncWithUrl values={values} />
          {children}
          <div className="actions filters-actions">
            {apply ? (
              <button type="submit" className="button button-primary">
                Apply filters
              </button>
            ) : null}
            <button type="button" className="button" onClick={onClear}>
              Clear filters
            </button>
          </div>
        </>
      )}
    </Form>
  );
}
