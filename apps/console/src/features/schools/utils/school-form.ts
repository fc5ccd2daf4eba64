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

/**
 * The school form: the contract's schoolInputSchema, except that the allowed IPs are typed one per
 * line in a textarea. Each line is checked by the contract's rule and a refusal names the line, so
 * the message can sit under the one field.
 */
export const schoolFormSchema = schoolInputSchema.extend({
  allowedIps: z
    .string()
    .transform((text, ctx) => {
      const lines = linesOf(text);
      for (const line of lines) {
        const checked = ipRule.safeParse(line);
        if (!checked.success) {
          ctx.addIssue({ code: 'custom', message: `“${line}”: ${checked.error.issues[0]?.message}` });
        }
      }
      return lines;
    })
    .pipe(allowedIpsRule),
});
export type SchoolFormValues = z.input<typeof schoolFormSchema>;

export const emptySchool: SchoolFormValues = { name: '', baseUrl: '', topicKey: '', allowedIps: '' };

export const toFormValues = (school: School): SchoolFormValues => ({
  name: school.name,
  baseUrl: school.baseUrl,
  topicKey: school.topicKey,
  allowedIps: school.allowedIps.join('\n'),
});

export type { SchoolInput };
