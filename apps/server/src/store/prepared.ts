import { type RawBuilder, sql } from 'kysely';

/**
 * Statements PostgreSQL plans once per connection: each runs as a named prepared statement, and
 * one without parameters keeps its first plan for as long as the connection lives (PostgreSQL
 * re-plans it by itself when a partition comes or goes). For a statement asked often that no
 * partition bound can narrow: planned each time over a country's partitions, a one-row read spent
 * far longer planning than working (docs/performance.md#the-outbox-on-partitions).
 *
 * Only for statements whose result keeps its columns whatever the schema becomes (never `*`),
 * and few of them: each connection keeps the plans of those it has run. SQLite ignores the name.
 */
export function prepared<T>(name: string, query: RawBuilder<T>): RawBuilder<T> {
  return sql<T>`${sql.raw(preparedMark(name))} ${query}`;
}

/**
 * `prepared` for a statement's text written whole, its parameters `$1`, `$2`, … (the call
 * recorder's group commit on PostgreSQL, composed of its owners' parts: recording/writers.ts).
 */
export function preparedText(name: string, text: string): string {
  return `${preparedMark(name)} ${text}`;
}

function preparedMark(name: string): string {
  if (!NAME.test(name)) throw new Error(`prepared: ${name} is not a lower-case name`);
  return `/* prepared:${name} */`;
}

const NAME = /^[a-z][a-z0-9_]{0,62}$/;
const MARK = /^\/\* prepared:([a-z][a-z0-9_]{0,62}) \*\//;

/**
 * pg's `query` arguments for a statement from `prepared`: the name given to pg, which prepares it
 * on the connection the first time and then only binds and executes it. Others as they are.
 */
export function asPrepared(args: unknown[]): unknown[] {
  const [text, values, ...rest] = args;
  if (typeof text !== 'string') return args;
  const name = MARK.exec(text)?.[1];
  if (name === undefined) return args;
  return [{ name, text, values }, ...rest];
}
