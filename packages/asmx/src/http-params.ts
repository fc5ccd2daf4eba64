/**
 * The HTTP GET and HTTP POST bindings' parameters: names match case-insensitively, the first
 * occurrence wins, extra parameters are ignored, an empty value is a value
 * (docs/wire-contract.md#http-get-and-http-post-bindings).
 */
export function httpParamReader(
  entries: Iterable<readonly [string, string]>,
): (name: string) => string | undefined {
  const byName = new Map<string, string>();
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    if (!byName.has(key)) byName.set(key, value);
  }
  return (name) => byName.get(name.toLowerCase());
}
