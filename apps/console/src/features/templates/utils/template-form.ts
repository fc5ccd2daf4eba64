import {
  type Template,
  templateInputSchema,
  templateTypeKey,
  unknownPlaceholders,
  unknownPlaceholdersMessage,
} from '@school/contract';
import type { z } from 'zod';

/** A title or body: the contract's rule, and only placeholders the server fills (as it checks). */
const withKnownPlaceholders = (rule: z.ZodType<string, string>) =>
  rule.superRefine((text, ctx) => {
    const unknown = unknownPlaceholders(text);
    if (unknown.length > 0) ctx.addIssue({ code: 'custom', message: unknownPlaceholdersMessage(unknown) });
  });

/** The template form: the contract's templateInputSchema, refusing unknown placeholders as the server does. */
export const templateFormSchema = templateInputSchema.extend({
  title: withKnownPlaceholders(templateInputSchema.shape.title),
  body: withKnownPlaceholders(templateInputSchema.shape.body),
});
export type TemplateFormValues = z.input<typeof templateFormSchema>;

export const emptyTemplate: TemplateFormValues = { type: '', title: '', body: '' };

/**
 * Templates no call can reach: one that differs from an older template's type only by case (from
 * before types matched whatever their case; the older one answers), by id, with the one that does.
 */
export function shadowedTemplates(templates: readonly Template[]): Map<number, Template> {
  const byKey = new Map<string, Template>();
  const shadowed = new Map<number, Template>();
  for (const t of [...templates].sort((a, b) => a.id - b.id)) {
    const key = templateTypeKey(t.type);
    const first = byKey.get(key);
    if (first) shadowed.set(t.id, first);
    else byKey.set(key, t);
  }
  return shadowed;
}

/** Why a type cannot have a template of its own (the contract's rule for a template's type), if it cannot. */
export const templateTypeProblem = (type: string): string | undefined =>
  templateInputSchema.shape.type.safeParse(type).error?.issues[0]?.message;
