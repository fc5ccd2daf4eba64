/** A record's id from its route's `:id` (a call, a delivery): a positive integer, or undefined. */
export function recordId(param: string | undefined): number | undefined {
  const id = Number(param);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
