import { type ChangeEvent, type FocusEvent, type ReactNode, useEffect, useId, useState } from 'react';
import { type DefaultValues, type FieldValues, useFormContext } from 'react-hook-form';
import type { z } from 'zod';
import { Form } from './form';

/** How long a list's choice waits before it applies: arrow keys through a list make one request. */
export const APPLY_PAUSE_MS = 400;
const pendingApply = new WeakMap<HTMLFormElement, ReturnType<typeof setTimeout>>();

function applySoon(form: HTMLFormElement | null, delay: number): void {
  if (!form) return;
  clearTimeout(pendingApply.get(form));
  if (delay <= 0) {
    pendingApply.delete(form);
    form.requestSubmit();
    return;
  }
  pendingApply.set(
    form,
    setTimeout(() => {
      pendingApply.delete(form);
      if (form.isConnected) form.requestSubmit();
    }, delay),
  );
}

/**
 * `registerOptions` for a list whose choice applies by itself, without the Apply button: after a
 * short pause (going through the list with the arrow keys is one change, not one per key), or at
 * once when the focus leaves it.
 */
export const applyChoice = {
  onChange: (event: ChangeEvent<HTMLSelectElement>) => applySoon(event.target.form, APPLY_PAUSE_MS),
  onBlur: (event: FocusEvent<HTMLSelectElement>) => {
    const form = event.target.form;
    if (form && pendingApply.has(form)) applySoon(form, 0);
  },
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
  // On a phone the filters fold behind one button, which says how many are on.
  const [open, setOpen] = useState(false);
  const id = useId();
  const active = Object.values(values as Record<string, unknown>).filter(
    (v) => v !== '' && v !== undefined && v !== null,
  ).length;
  return (
    <div className={open ? 'filters-panel filters-panel-open' : 'filters-panel'}>
      <button
        type="button"
        className="button filters-toggle"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen((o) => !o)}
      >
        Filters{active > 0 ? ` · ${active} on` : ''}
      </button>
      <Form
        id={id}
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
    </div>
  );
}

/**
 * A filter's list: first "Any" (the empty value, which the URL leaves out), then each value by its
 * label (by itself without `labels`).
 */
export const filterChoices = <V extends string>(
  values: readonly V[],
  labels?: Readonly<Record<V, string>>,
): { value: string; label: string }[] => [
  { value: '', label: 'Any' },
  ...values.map((value) => ({ value, label: labels?.[value] ?? value })),
];
