import { type DeliveryState, LOG_PROVIDER } from '@school/contract';
import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { type Database, type SchoolScope, schoolCondition } from '../store/index.js';
import type { DeliveriesTable, DeliveryKind, DeliveryStatus } from './schema.js';

/** Filters over deliveries; times in epoch milliseconds (when queued), `to` exclusive. */
export interface DeliveryQuery {
  /** `sent` is sent through a real provider, `logged` sent through the `log` one (see deliveryState). */
  readonly status?: DeliveryState | undefined;
  readonly kind?: DeliveryKind | undefined;
  readonly provider?: string | undefined;
  readonly callId?: number | undefined;
  /** Part of the recipient, as typed (see recipientNeedles); ASCII letters in any case. */
  readonly recipient?: string | undefined;
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  /**
   * Whose deliveries: those of the schools of a member of staff limited to some (a delivery is its
   * call's school's), or null or undefined for organisation-wide staff. From the session, never
   * from the query string.
   */
  readonly scope?: SchoolScope | undefined;
}

/** A position in the newest-first order: the last row of the previous page. */
export interface DeliveryCursor {
  readonly createdAt: number;
  readonly id: number;
}

/**
 * What the API calls a delivery's status: the stored one, except that the `log` provider's sent
 * deliveries are `logged` (written to the server's log, nothing left the machine). The store and
 * the dispatcher know only `sent`; the difference is the provider the delivery was queued for.
 */
export function deliveryState(row: Pick<DeliveriesTable, 'status' | 'provider'>): DeliveryState {
  return row.status === 'sent' && row.provider === LOG_PROVIDER ? 'logged' : row.status;
}

/**
 * The texts a recipient search looks for: what was typed and, when it reads as a phone number,
 * that number as the store writes it (E.164): spaces, dashes, dots, brackets and a `(0)` dropped,
 * `00` for `+`, a national leading 0 dropped (`07911 123456` finds `+447911123456`).
 */
export function recipientNeedles(typed: string): string[] {
  const text = typed.trim();
  if (text === '') return [];
  const needles = [text];
  if (/^\+?[\d\s().-]+$/.test(text) && /\d/.test(text)) {
    let phone = text.replace(/\(0\)/g, '').replace(/[\s().-]/g, '');
    if (phone.startsWith('00')) phone = `+${phone.slice(2)}`;
    else if (/^0[1-9]/.test(phone)) phone = phone.slice(1);
    if (phone !== text) needles.push(phone);
  }
  return needles;
}

/**
 * A LIKE pattern for "contains": `%`, `_` and `\` taken literally, ASCII letters in lower case
 * (SQLite's LIKE folds ASCII letters; on PostgreSQL the column is folded the same way).
 */
const containsPattern = (text: string) =>
  `%${text.replace(/[A-Z]/g, (c) => c.toLowerCase()).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The list's filters. The `log` provider is written as a literal, so the partial index of logged
 * deliveries (migration 0010) serves `status = logged` and the counts on both databases.
 */
export function applyDeliveryFilters<O>(
  qb: SelectQueryBuilder<Database, 'deliveries', O>,
  query: DeliveryQuery,
  dialect: 'sqlite' | 'postgres',
): SelectQueryBuilder<Database, 'deliveries', O> {
  let out = qb;
  const log = sql.lit(LOG_PROVIDER);
  // Sent deliveries are most of the table. SQLite keeps no statistics, so an equality on the
  // status index looks selective to it: it would read every sent one and sort them. `+status` is
  // not indexable, so it reads newest first by (created_at, id) and stops at the page instead.
  // (The other statuses are few: their index and a sort are the better plan.)
  const sent = dialect === 'sqlite' ? sql<DeliveryStatus>`+status` : sql<DeliveryStatus>`status`;
  if (query.status === 'logged') {
    out = out.where(sent, '=', 'sent').where('provider', '=', log);
  } else if (query.status === 'sent') {
    out = out.where(sent, '=', 'sent').where('provider', '<>', log);
  } else if (query.status !== undefined) {
    out = out.where('status', '=', query.status);
  }
  if (query.kind !== undefined) out = out.where('kind', '=', query.kind);
  if (query.provider !== undefined) out = out.where('provider', '=', query.provider);
  if (query.callId !== undefined) out = out.where('call_id', '=', query.callId);
  if (query.from !== undefined) out = out.where('created_at', '>=', query.from);
  if (query.to !== undefined) out = out.where('created_at', '<', query.to);
  // A school's deliveries newest first through deliveries_school_created_at (migration 0025).
  const schools = schoolCondition(query.scope);
  if (schools) out = out.where(schools);
  const needles = recipientNeedles(query.recipient ?? '');
  if (needles.length > 0) {
    const recipient =
      dialect === 'postgres' ? sql<string>`lower(recipient COLLATE "C")` : sql<string>`recipient`;
    out = out.where((eb) =>
      eb.or(needles.map((n) => sql<boolean>`${recipient} LIKE ${containsPattern(n)} ESCAPE '\\'`)),
    );
  }
  return out;
}

/** Deliveries older than a cursor in the newest-first order (created_at, id), seeking the index. */
export const olderThan = (cursor: DeliveryCursor) => (eb: ExpressionBuilder<Database, 'deliveries'>) =>
  eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(cursor.createdAt, cursor.id));
