import { z } from 'zod';
import { TEMPLATE_PLACEHOLDERS } from './api.js';

/**
 * `{name}` placeholders filled from `values`; unknown names stay as written. The server fills
 * push titles and bodies and SMS texts with it, the console its template previews.
 */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (all, name: string) =>
    Object.hasOwn(values, name) ? (values[name] ?? '') : all,
  );
}

/**
 * The key a notification type is matched by: a template answers every type that differs from its
 * own only by case or by spaces around it (parents' apps send `Homework`, `homework`, ` HOMEWORK`
 * interchangeably). Two templates may not share a key.
 */
export const templateTypeKey = (type: string): string => type.trim().toLowerCase();

/** The matching rule, in words, for the Templates page and the API's documentation. */
export const TEMPLATE_MATCH_RULE =
  'A notification type matches its template whatever its case and the spaces around it: Homework, HOMEWORK and " homework " all get the homework template.';

const known: ReadonlySet<string> = new Set(TEMPLATE_PLACEHOLDERS);

/** The `{name}` placeholders a template's text uses that the server does not fill, each once. */
export function unknownPlaceholders(text: string): string[] {
  const found = new Set<string>();
  for (const [placeholder] of text.matchAll(/\{\w+\}/g)) {
    if (!known.has(placeholder)) found.add(placeholder);
  }
  return [...found];
}

/** "a, b and c" */
const listOf = (items: readonly string[]): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/**
 * Why a title or body with unknown placeholders is refused, naming them and the known ones (one
 * wording for the server's 400 and the console's form).
 */
export function unknownPlaceholdersMessage(unknown: readonly string[]): string {
  const hints = unknown.flatMap((u) => {
    const near = TEMPLATE_PLACEHOLDERS.find((k) => k.toLowerCase() === u.toLowerCase());
    return near ? [`${u} is written ${near}`] : [];
  });
  return (
    `${unknown.length === 1 ? 'Unknown placeholder' : 'Unknown placeholders'} ${listOf(unknown)}: ` +
    `it would be sent as written. Use ${listOf(TEMPLATE_PLACEHOLDERS)}.` +
    (hints.length > 0 ? ` (${listOf(hints)}.)` : '')
  );
}

/** A notification type calls sent that no template answers (GET /api/templates/missing). */
export const missingTemplateSchema = z.object({
  /** The type's key (trimmed, lower case): what a template for it would match. */
  type: z.string(),
  /** How it was sent, most frequent first (at most 5 spellings). */
  spellings: z.array(z.string()),
  /** SendNotificationType calls that sent it, among those looked at. */
  count: z.number().int(),
  /** ISO 8601, the latest of them. */
  lastSeenAt: z.string(),
});
export type MissingTemplate = z.infer<typeof missingTemplateSchema>;

export const missingTemplatesSchema = z
  .object({
    /** ISO 8601: calls from this time on were looked at… */
    since: z.string(),
    /** …at most this many, the most recent (the bound that keeps the query quick). */
    limit: z.number().int(),
    /** How many successful SendNotificationType calls were looked at. */
    scanned: z.number().int(),
    /** True when the limit was reached: older calls in the period were not looked at. */
    limited: z.boolean(),
    /** The types, most sent first (at most 50). */
    types: z.array(missingTemplateSchema),
    /** Types left out of `types` beyond the first 50. */
    more: z.number().int(),
  })
  .meta({ id: 'MissingTemplates' });
export type MissingTemplates = z.infer<typeof missingTemplatesSchema>;
