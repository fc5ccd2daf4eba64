import type { UseMutationResult } from '@tanstack/react-query';
import { useEffect } from 'react';
import { type FieldPath, type FieldValues, type UseFormReturn, useFormContext } from 'react-hook-form';
import { ProblemError } from '../../lib/api-client';
import { ProblemMessage } from './status';

/**
 * The submit of a form that adds a record, or with `editing` changes one: `onSaving`, then create or
 * update; once added the form is emptied for the next one. The fields the server refused are
 * named in its problem (e.g. allowedIps.2): their messages go under those fields.
 */
export function saveOnSubmit<Item extends { id: number }, Input, Values extends FieldValues>({
  editing,
  create,
  update,
  empty,
  fields,
  onSaving,
  onSaved,
}: {
  editing: Item | null;
  create: Pick<UseMutationResult<Item, Error, Input>, 'mutate'>;
  update: Pick<UseMutationResult<Item, Error, { id: number; input: Input }>, 'mutate'>;
  empty: Values;
  fields: readonly FieldPath<Values>[];
  onSaving: () => void;
  onSaved: (item: Item, created: boolean) => void;
}) {
  return (input: Input, methods: Pick<UseFormReturn<Values>, 'reset' | 'setError'>) => {
    onSaving();
    const handlers = {
      onSuccess: (item: Item) => {
        if (!editing) methods.reset(empty);
        onSaved(item, !editing);
      },
      onError: (error: Error) => showFieldErrors(error, fields, methods),
    };
    if (editing) update.mutate({ id: editing.id, input }, handlers);
    else create.mutate(input, handlers);
  };
}

/** The one of `fields` that a problem's error path (e.g. allowedIps.2) belongs to. */
const fieldOf = <F extends string>(path: string, fields: readonly F[]): F | undefined =>
  fields.find((f) => path === f || path.startsWith(`${f}.`));

/**
 * Puts the messages of a 400's problem (`errors`, by field path, e.g. allowedIps.2) under the
 * form's fields of those names; returns whether any went under a field.
 */
export function showFieldErrors<Values extends FieldValues>(
  error: unknown,
  fields: readonly FieldPath<Values>[],
  methods: Pick<UseFormReturn<Values>, 'setError'>,
): boolean {
  const errors = error instanceof ProblemError ? error.problem.errors : undefined;
  let shown = false;
  for (const [path, message] of Object.entries(errors ?? {})) {
    const name = fieldOf(path, fields);
    if (name) {
      methods.setError(name, { type: 'server', message });
      shown = true;
    }
  }
  return shown;
}

/**
 * Whether the refusal names one of `fields`: showFieldErrors shows its message under that field,
 * so the form does not say it again below.
 */
export const namesAField = (error: unknown, fields: readonly string[]): boolean =>
  error instanceof ProblemError &&
  Object.keys(error.problem.errors ?? {}).some((path) => fieldOf(path, fields) !== undefined);

/** Puts the keyboard on a field when the form opens to edit a record. */
export function FocusField({ name }: { name: string }) {
  const { setFocus } = useFormContext();
  useEffect(() => setFocus(name), [setFocus, name]);
  return null;
}

/** Add (or Save changes and Cancel, when editing), and why the last save failed. */
export function SaveActions({
  save,
  editing,
  addLabel,
  onCancel,
}: {
  save: { isPending: boolean; isError: boolean; error: unknown };
  editing: boolean;
  /** The submit button's text when adding, e.g. "Add school". */
  addLabel: string;
  onCancel: () => void;
}) {
  return (
    <>
      <div className="actions">
        <button type="submit" className="button button-primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : editing ? 'Save changes' : addLabel}
        </button>
        {editing ? (
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
      {save.isError ? (
        <ProblemMessage error={save.error} prefix={editing ? 'Not saved' : 'Not added'} />
      ) : null}
    </>
  );
}
