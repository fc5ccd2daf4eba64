import { useEffect, useRef } from 'react';
import { type FieldValues, useFormContext, useWatch } from 'react-hook-form';

/**
 * What was typed in a form, kept in this tab (sessionStorage) until it is sent: a session that
 * ends under way, a reload or a look at another page does not lose it. Secrets (`exclude`, e.g.
 * an auth code) are never kept. Render <KeepDraft> inside the form; call clearDraft once it is sent.
 */
const PREFIX = 'draft:';

function read(key: string): Record<string, unknown> | undefined {
  try {
    const text = sessionStorage.getItem(PREFIX + key);
    const value = text ? (JSON.parse(text) as unknown) : undefined;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function clearDraft(key: string): void {
  try {
    sessionStorage.removeItem(PREFIX + key);
  } catch {}
}

const NONE: readonly string[] = [];

export function KeepDraft({ draftKey, exclude = NONE }: { draftKey: string; exclude?: readonly string[] }) {
  const { control, getValues, setValue } = useFormContext<FieldValues>();
  // Put back what was kept, once, field by field (only fields the form has, only strings).
  const restored = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (restored.current === draftKey) return;
    restored.current = draftKey;
    const kept = read(draftKey);
    if (!kept) return;
    const current = getValues();
    for (const [name, value] of Object.entries(kept)) {
      if (typeof value === 'string' && name in current && !exclude.includes(name) && value !== '')
        setValue(name, value);
    }
  }, [draftKey, exclude, getValues, setValue]);
  const values = useWatch({ control });
  useEffect(() => {
    const kept = Object.fromEntries(
      Object.entries(values).filter(
        ([name, v]) => !exclude.includes(name) && typeof v === 'string' && v !== '',
      ),
    );
    try {
      if (Object.keys(kept).length === 0) sessionStorage.removeItem(PREFIX + draftKey);
      else sessionStorage.setItem(PREFIX + draftKey, JSON.stringify(kept));
    } catch {
      // Storage refused (a privacy setting): the form works, without a draft.
    }
  }, [values, draftKey, exclude]);
  return null;
}
