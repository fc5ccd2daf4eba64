import { type School, type SchoolInput, schoolInputSchema } from '@school/contract';
import { z } from 'zod';

// The contract's rule for one allowed caller (an IP address or CIDR range) and for the list.
const allowedIpsRule = schoolInputSchema.shape.allowedIps.unwrap();
const ipRule = allowedIpsRule.element;

/** The textarea's lines, trimmed, blank ones left out. */
export const linesOf = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/** “a”, “b” and “c” */
const quotedList = (items: readonly string[]): string => {
  const quoted = items.map((item) => `“${item}”`);
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1)}`;
};

/**
 * The school form: the contract's schoolInputSchema, except that the allowed IPs are typed one per
 * line in a textarea. Each line is checked by the contract's rule; one message under the field
 * names every line refused (a form shows one message per field).
 */
export const schoolFormSchema = schoolInputSchema.extend({
  allowedIps: z
    .string()
    .transform((text, ctx) => {
      const lines = linesOf(text);
      const refused = new Map<string, string[]>();
      for (const line of lines) {
        const checked = ipRule.safeParse(line);
        if (!checked.success) {
          const reason = checked.error.issues[0]?.message ?? 'Not allowed.';
          refused.set(reason, [...(refused.get(reason) ?? []), line]);
        }
      }
      if (refused.size > 0) {
        const message = [...refused].map(([reason, bad]) => `${quotedList(bad)}: ${reason}`).join(' ');
        ctx.addIssue({ code: 'custom', message });
      }
      return lines;
    })
    .pipe(allowedIpsRule),
});
export type SchoolFormValues = z.input<typeof schoolFormSchema>;

export const emptySchool: SchoolFormValues = { name: '', baseUrl: '', topicKey: '', allowedIps: '' };

/** The URL parameter that starts a new school with its base URL filled in (from the Send page). */
export const BASE_URL_PARAM = 'baseUrl';

export const toFormValues = (school: School): SchoolFormValues => ({
  name: school.name,
  baseUrl: school.baseUrl,
  topicKey: school.topicKey,
  allowedIps: school.allowedIps.join('\n'),
});

export type { SchoolInput };
