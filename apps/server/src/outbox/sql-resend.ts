import type { Expression, ExpressionBuilder, SqlBool, Transaction } from 'kysely';
import { type Database, type SchoolScope, schoolCondition } from '../store/index.js';
import { onTheirWaySince } from './on-their-way.js';
import { from, type OutboxSqlContext, to } from './sql-context.js';

/**
 * What else a resend changes in its own transaction (the Dashboard's roll-ups of the deliveries,
 * given by the caller: stats/delivery-rollups.ts): called before the deliveries change, it answers
 * what to do once the oldest resent delivery's `created_at` is known (null: none was resent).
 */
export type ResendHook = (
  trx: Transaction<Database>,
) => Promise<(oldestCreatedAt: number | null) => Promise<void>>;

/**
 * A dead delivery that can be sent again: a push, or an SMS that still has its sealed text (a
 * dead auth code past its validity has lost it: it could only be sent empty).
 */
const resendable = (eb: ExpressionBuilder<Database, 'deliveries'>) =>
  eb.or([eb('kind', '=', 'push'), eb('secret', 'is not', null)]);

/** Sending again on demand: staff resend dead deliveries (`resend`), pushNoti makes pending pushes due now (`due-now`). */
export function resendSql({ store, db }: OutboxSqlContext, onResend: ResendHook | undefined) {
  /**
   * `resend` of the dead deliveries `which` picks that can be sent again, with `onResend` in the
   * same commit (the Dashboard's roll-ups of their hours dropped: they are dead no more). Answers
   * how many.
   */
  const resend = (
    now: number,
    which: (eb: ExpressionBuilder<Database, 'deliveries'>) => Expression<SqlBool>,
  ) =>
    db.transaction().execute(async (trx) => {
      const resentFrom = await onResend?.(trx);
      // SQLite has no UPDATE in a WITH: the times come back, their oldest is found here.
      const resent = await trx
        .updateTable('deliveries')
        .set({ status: to('resend'), attempts: 0, next_attempt_at: now, updated_at: now })
        .where('status', 'in', from('resend'))
        .where(resendable)
        .where(which)
        .returning('created_at')
        .execute();
      let oldest: number | null = null;
      for (const r of resent) oldest = Math.min(oldest ?? Number.POSITIVE_INFINITY, Number(r.created_at));
      await resentFrom?.(oldest);
      return resent.length;
    });

  return {
    /** `due-now` for every pending push (pushNoti). Returns how many. */
    async makePushesDue(now: number): Promise<number> {
      // Pending ones, so from the oldest delivery on its way on (a pushNoti is a school's call).
      const since = await onTheirWaySince(db, store.dialect);
      if (since === null) return 0;
      let due = db
        .updateTable('deliveries')
        .set({ status: to('due-now'), next_attempt_at: now, updated_at: now })
        .where('status', 'in', from('due-now'))
        .where('kind', '=', 'push');
      if (since !== undefined) due = due.where('created_at', '>=', since);
      const result = await due.executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    /** `resend` of one dead delivery that can be sent again; false when it is not such a one. */
    async resend(id: number, now: number): Promise<boolean> {
      return (await resend(now, (eb) => eb('id', '=', id))) === 1;
    },

    /** `resend` of every dead delivery that can be sent again, of `scope`'s schools. Returns how many. */
    resendAllDead(now: number, scope?: SchoolScope): Promise<number> {
      const schools = schoolCondition(scope);
      return resend(now, (eb) => schools ?? eb.lit(true));
    },
  };
}
