/**
 * `{name}` placeholders filled from `values`; unknown names stay as written. The server fills
 * push titles and bodies and SMS texts with it, the console its template previews.
 */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (all, name: string) =>
    Object.hasOwn(values, name) ? (values[name] ?? '') : all,
  );
}
