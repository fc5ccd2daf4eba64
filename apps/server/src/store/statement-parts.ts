/**
 * PostgreSQL: one statement written by several owners, each naming only its own tables (docs/
 * architecture.md#who-owns-which-table). The call recorder's group commit is one
 * (recording/writers.ts): the calls' insert is the recorder's, the deliveries, their claims and
 * the finished attempts the outbox's (outbox/enqueue.ts), the announcement to the other instances
 * the store's (pg-watch.ts). A part reads the batch's new calls from the relation the composer names
 * to it, as `(ord, id)`: the call's place in the batch (1, 2, …) and its id.
 *
 * A part's text is the same whatever it is given, so that the whole is a prepared statement planned
 * once per connection (prepared.ts): what varies goes in its parameters, a batch's rows as one JSON
 * array each (`json_populate_recordset`, whose columns are the table's own), never in its text.
 */
export interface StatementPart {
  /** Its common table expressions, `name AS (…), …`, each named after its owner. */
  readonly ctes: string;
  /**
   * Its result columns, `… AS name, …`: what it reads back, and what makes a read-only expression
   * of its run (one that nothing refers to is not run at all; one that writes always is).
   */
  readonly columns: string;
  /** How many parameters it numbers, `$first` onwards. */
  readonly parameters: number;
}

/** A JSON string's escapes PostgreSQL refuses to turn into text: U+0000, and a lone surrogate. */
const REFUSED_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g;

/**
 * `value` as a JSON parameter of a statement (a batch's rows), each of its strings as PostgreSQL
 * can hold it: U+0000 and a lone surrogate become U+FFFD, as they do in a text parameter (the NUL
 * plugin, nul-plugin.ts; the UTF-8 encoding of a lone surrogate), where its JSON escape would make
 * the whole statement fail. JSON.stringify writes both as `\u` escapes and never a surrogate of a
 * pair as one: the escapes are found after an even run of backslashes (an odd one is a backslash
 * written before a `u`).
 */
export function jsonParameter(value: unknown): string {
  const json = JSON.stringify(value);
  return json.includes('\\u') ? json.replace(REFUSED_ESCAPE, '$1\\ufffd') : json;
}
