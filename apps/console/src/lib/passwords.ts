/**
 * The check of a "confirm password" field, for `schema.refine(...samePasswords('password',
 * 'confirm'))`: the message goes under the confirm field. The contract gives every other rule.
 */
export const samePasswords = <K extends string>(
  field: K,
  confirm: K,
): [(values: Record<K, unknown>) => boolean, { path: PropertyKey[]; message: string }] => [
  (values) => values[field] === values[confirm],
  { path: [confirm], message: 'The two passwords are not the same.' },
];
