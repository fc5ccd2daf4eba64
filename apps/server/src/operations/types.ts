import type { FastifyBaseLogger } from 'fastify';
import type { NewDelivery } from '../outbox/index.js';
import type { BookRow } from '../store/index.js';

export interface CallContext {
  /** The caller's address: limits and schools restricted to IP ranges use it. */
  readonly callerIp: string;
  /**
   * The staff user sending from the console (logged in and audited): their own per-caller budget,
   * not the anonymous callers' budget of the address they share (limits/authcode.ts).
   */
  readonly staff?: string | undefined;
  /**
   * Send from the console: the school the staff user acts for (its id), when they named one; null
   * when they named none. Absent on the `.asmx` doors. The call belongs to that school.
   */
  readonly actingForSchoolId?: number | null | undefined;
  /**
   * Send from the console by a user limited to schools: the ids of the schools they may act for
   * (a `baseUrlSchool` naming another is refused). Null or absent: any school.
   */
  readonly staffSchoolIds?: readonly number[] | null | undefined;
  /** The request's log: an unexpected failure is logged there, with the request's id. */
  readonly log: Pick<FastifyBaseLogger, 'debug' | 'error'>;
}

/** What a handler made of a call, before the runner adds its parameters as recorded and a door answers. */
export type OperationOutcome =
  | {
      readonly outcome: 'ok';
      /** Deliveries to queue, committed with the call record (the outbox). */
      readonly deliveries?: readonly NewDelivery[];
      /** What was done, in words, for the call record. */
      readonly note?: string;
      /** GetBookPdfByTerm: the book found, for the HTTP bindings to serve. */
      readonly book?: BookRow;
      /** What to start once the call record is committed (pushNoti's dispatch), never before. */
      readonly afterCommit?: () => void;
    }
  | {
      readonly outcome: 'client-error';
      /** The HTTP status the HTTP bindings answer with (docs/faults.md). */
      readonly status: 400 | 403 | 404 | 429;
      readonly message: string;
      /** The parameter at fault, when one is. */
      readonly param?: string;
      /** Rate limited: seconds until a call may succeed (the Retry-After header). */
      readonly retryAfter?: number;
    };

/**
 * The parameters as the call's record shows them: as the operation normalised them, or as
 * received when they were not valid; secret ones masked.
 */
export type RecordedParams = Readonly<Record<string, string>>;

/**
 * What an operation made of a call, with its parameters as the record shows them: the handler's
 * outcome, a refusal of its parameters (`absent`: the one at fault was not sent at all), or the
 * server error an unexpected failure became.
 */
export type OperationResult = (
  | (Extract<OperationOutcome, { outcome: 'ok' }> & { readonly params: RecordedParams })
  | (Extract<OperationOutcome, { outcome: 'client-error' }> & {
      readonly params: RecordedParams;
      readonly absent?: true;
    })
  | { readonly outcome: 'server-error'; readonly params: RecordedParams }
) & {
  /**
   * The school the call belongs to (operations/call-school.ts), kept with its record: whose staff
   * see it. Null: none (seen organisation-wide only).
   */
  readonly schoolId: number | null;
};
