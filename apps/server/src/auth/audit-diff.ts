/** Fields of records that are bookkeeping, not content: left out of what an audit entry says changed. */
const BOOKKEEPING = new Set(['id', 'createdAt', 'updatedAt', 'uploadedAt']);

/**
 * What changed between two shapes of a record (the API's), as `field → { from, to }`, for the
 * audit log. Arrays and objects compare by their JSON.
 */
export function changes(
  before: Readonly<Record<string, unknown>> | undefined,
  after: Readonly<Record<string, unknown>>,
): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [key, to] of Object.entries(after)) {
    if (BOOKKEEPING.has(key)) continue;
    const from = before?.[key] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) out[key] = { from, to };
  }
  return out;
}
