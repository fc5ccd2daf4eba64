import { operationByName, type TEMPLATE_PLACEHOLDERS } from '@school/contract';

/** The type of the generic template, used for any type without its own. */
export const GENERIC_TYPE = '*';
/** The type SendMarkNotes uses. */
export const MARKS_TYPE = 'marks';

const EXAMPLE_SCHOOL = 'Example School';

const examplesOf = (operation: string): Record<string, string> =>
  Object.fromEntries((operationByName(operation)?.params ?? []).map((p) => [p.name, p.example]));

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
  const shownType = type && type !== GENERIC_TYPE ? type : (sent.TypeNotfication ?? 'homework');
  return { ...sent, TypeNotfication: shownType, type: shownType, school: EXAMPLE_SCHOOL };
}

/** `{name}` placeholders filled from `values`; unknown names stay as written (as the server does). */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (all, name: string) =>
    Object.hasOwn(values, name) ? (values[name] ?? '') : all,
  );
}

export const PLACEHOLDER_DESCRIPTIONS: Record<(typeof TEMPLATE_PLACEHOLDERS)[number], string> = {
  '{type}': 'The notification type sent (TypeNotfication), or marks.',
  '{id}': 'The id of the item or marks entry.',
  '{id_class}': 'The class (marks only).',
  '{baseUrlSchool}': "The school's base URL, as sent.",
  '{school}': "The school's name, as registered.",
};
