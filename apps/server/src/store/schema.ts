import type { Generated } from 'kysely';

/** Where a call came in. `console` is the staff console's JSON API. */
export type Binding = 'soap11' | 'soap12' | 'http-get' | 'http-post' | 'console';
export type Outcome = 'ok' | 'client-error' | 'server-error';

export interface CallsTable {
  id: Generated<number>;
  /** Epoch milliseconds when the request arrived. */
  at: number;
  /** The endpoint group's service name, e.g. `AuthCodeSending`. */
  group_name: string;
  /** The operation, or null when the request named none we know. */
  operation: string | null;
  binding: Binding;
  caller_ip: string;
  user_agent: string | null;
  /** JSON object of the parameters as received (secrets masked); null when none could be read. */
  params: string | null;
  outcome: Outcome;
  status: number;
  /** The fault or error text the caller got. */
  error: string | null;
  duration_ms: number;
  /** The request as an HTTP message (selected headers, body), secrets masked, capped. */
  request: string;
  request_bytes: number;
  /** The response as an HTTP message, capped. */
  response: string;
  response_bytes: number;
}

export interface Database {
  calls: CallsTable;
}
