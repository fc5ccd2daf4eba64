import {
  fillTemplate,
  type OperationName,
  operationByName,
  type ParamsOf,
  type TEMPLATE_PLACEHOLDERS,
} from '@school/contract';

export { fillTemplate };

/** The type of the generic template, used for any type without its own. */
export const GENERIC_TYPE = '*';
/** The type SendMarkNotes uses. */
export const MARKS_TYPE = 'marks';

const EXAMPLE_SCHOOL = 'Example School';

/** An operation's example values from the table, typed by its parameters' names. */
const examplesOf = <Name extends OperationName>(operation: Name): ParamsOf<Name> =>
  Object.fromEntries(
    (operationByName(operation)?.params ?? []).map((p) => [p.name, p.example]),
  ) as ParamsOf<Name>;

/**
 * The values the server fills a template from, with the contract's example values: the
 * operation's parameters, `type` (the type sent, or `marks`) and `school` (the school's name).
 * SendMarkNotes uses `marks`; every other type comes from SendNotificationType, which has no
 * id_class, so `{id_class}` stays as written there, as it would in the push.
 */
export function exampleValues(type: string): Record<string, string> {
  if (type === MARKS_TYPE)
    return { ...examplesOf('SendMarkNotes'), type: MARKS_TYPE, school: EXAMPLE_SCHOOL };
  const sent = examplesOf('SendNotificationType');
  const shownType = type && type !== GENERIC_TYPE ? type : sent.TypeNotfication;
  return { ...sent, TypeNotfication: shownType, type: shownType, school: EXAMPLE_SCHOOL };
}

export const PLACEHOLDER_DESCRIPTIONS: Record<(typeof TEMPLATE_PLACEHOLDERS)[number], string> = {
  '{type}': 'The notification type sent (TypeNotfication), or marks.',
  '{id}': 'The id of the item or marks entry.',
  '{id_class}': 'The class (marks only).',
  '{baseUrlSchool}': "The school's base URL, as sent.",
  '{school}': "The school's name, as registered.",
};
