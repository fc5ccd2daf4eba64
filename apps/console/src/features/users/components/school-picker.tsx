import { ALL_SCHOOLS, type School } from '@school/contract';
import { useId } from 'react';

/**
 * The schools a user may see and act for: every school, or only those ticked. A fieldset of two
 * choices and, for the second, a checkbox per school by name (keyboard and screen readers get
 * native controls; one per line, so it fits a phone). `null` is every school; a list, only those.
 */
export function SchoolPicker({
  legend,
  schools,
  value,
  onChange,
  error,
}: {
  legend: string;
  /** The registered schools; undefined while they load. */
  schools: readonly Pick<School, 'id' | 'name'>[] | undefined;
  value: readonly number[] | null;
  onChange: (value: number[] | null) => void;
  /** What is wrong with the choice (none ticked), said under it. */
  error?: string | undefined;
}) {
  const id = useId();
  const some = value !== null;
  const ticked = new Set(value ?? []);
  const errorId = error ? `${id}-error` : undefined;
  const descriptionId = `${id}-description`;
  return (
    <fieldset
      className={`school-picker${error ? ' field-invalid' : ''}`}
      aria-describedby={[descriptionId, errorId].filter(Boolean).join(' ')}
      aria-invalid={error ? true : undefined}
    >
      <legend>{legend}</legend>
      <p className="field-description" id={descriptionId}>
        A user limited to schools sees and sends for those schools only, and cannot manage schools, books,
        templates or users, whatever their role.
      </p>
      <label className="school-choice">
        <input type="radio" name={`${id}-scope`} checked={!some} onChange={() => onChange(null)} />{' '}
        {ALL_SCHOOLS}
      </label>
      <label className="school-choice">
        <input
          type="radio"
          name={`${id}-scope`}
          checked={some}
          onChange={() => onChange([...ticked])}
          disabled={schools?.length === 0}
        />{' '}
        Only these schools
      </label>
      {schools === undefined ? (
        <p className="muted school-none">Loading the schools…</p>
      ) : schools.length === 0 ? (
        <p className="muted school-none">No school is registered yet: add one on the Schools page first.</p>
      ) : some ? (
        <ul className="school-list">
          {schools.map((school) => (
            <li key={school.id}>
              <label className="school-choice">
                <input
                  type="checkbox"
                  checked={ticked.has(school.id)}
                  onChange={(event) => {
                    const next = new Set(ticked);
                    if (event.target.checked) next.add(school.id);
                    else next.delete(school.id);
                    onChange(schools.filter((s) => next.has(s.id)).map((s) => s.id));
                  }}
                />{' '}
                {school.name}
              </label>
            </li>
          ))}
        </ul>
      ) : null}
      {error ? (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      ) : null}
    </fieldset>
  );
}

/** The schools a user is limited to, by name, for a table cell or a message. */
export function schoolNames(
  schoolIds: readonly number[] | null,
  schools: readonly Pick<School, 'id' | 'name'>[] | undefined,
): string {
  if (schoolIds === null) return ALL_SCHOOLS;
  const names = new Map((schools ?? []).map((s) => [s.id, s.name]));
  return schoolIds.map((id) => names.get(id) ?? `school ${id} (deleted)`).join(', ');
}

/** The message when a limited user is given no school: never read as every school. */
export const NO_SCHOOL_TICKED = `Tick at least one school, or choose ${ALL_SCHOOLS}.`;
