/**
 * A list page's filters (History, Deliveries, Audit) live in the URL's search params — a view can
 * be shared, a reload keeps it — in the API's own names and formats, so the same string serves
 * the list, its live tail and its export. A value the API would refuse (a hand-edited link) is
 * dropped rather than sent: each is checked with the API's own schema of that filter.
 */
interface FieldSchema {
  safeParse(value: unknown): { success: boolean; data?: unknown };
}

export interface UrlFilters<F> {
  fromSearch(search: URLSearchParams): F;
  toSearch(filters: F): URLSearchParams;
  has(filters: F): boolean;
}

/** What a list page gives its filters form: the URL's filters, and where changed ones go. */
export interface UrlFiltersProps<F> {
  filters: F;
  onChange: (filters: F) => void;
}

export function urlFilters<F extends object>(
  schemas: Readonly<Record<string, FieldSchema>>,
  keys: readonly (keyof F & string)[],
): UrlFilters<F> {
  return {
    fromSearch(search) {
      const filters: Record<string, unknown> = {};
      for (const key of keys) {
        const value = search.get(key);
        if (value === null || value === '') continue;
        const parsed = schemas[key]?.safeParse(value);
        if (parsed?.success && parsed.data !== undefined) filters[key] = parsed.data;
      }
      return filters as F;
    },
    toSearch(filters) {
      const search = new URLSearchParams();
      for (const key of keys) {
        const value = (filters as Record<string, unknown>)[key];
        if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
      }
      return search;
    },
    has: (filters) => Object.keys(filters).length > 0,
  };
}

/** Filters built from a form's values, for the URL: those left empty (undefined) are dropped. */
export const withoutEmpty = <F>(filters: Record<string, string | undefined>): F =>
  Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) as F;
