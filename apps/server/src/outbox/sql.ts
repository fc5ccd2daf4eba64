import type { Sealer } from '../secrets/sealer.js';
import type { Store } from '../store/index.js';
import { claimSql } from './sql-claims.js';
import { outboxSqlContext } from './sql-context.js';
import { finishSql } from './sql-finish.js';
import { type ResendHook, resendSql } from './sql-resend.js';
import { sealedTextSql } from './sql-sealed-texts.js';
import { sweepSql } from './sql-sweeps.js';

/**
 * The outbox's SQL, every transition of a delivery for both databases (the conditions from
 * states.ts), a file per concern: claims and hedges (sql-claims.ts), finished attempts
 * (sql-finish.ts), the sweeps of attempts cut short and codes past their validity
 * (sql-sweeps.ts), resends and pushNoti's due-now (sql-resend.ts), and the sealed texts
 * (sql-sealed-texts.ts). On PostgreSQL what several instances could take together is locked with
 * `FOR UPDATE SKIP LOCKED`; SQLite's single writer serialises them already. Bookkeeping runs in
 * the store's relaxed transactions (store/unit-of-work.ts: on SQLite it does not wait for the
 * disk; the next recorded call's commit makes it durable).
 */
export function createOutboxSql(store: Store, sealer: Sealer, onResend?: ResendHook) {
  const context = outboxSqlContext(store);
  return {
    ...claimSql(context),
    ...finishSql(context),
    ...sweepSql(context),
    ...resendSql(context, onResend),
    ...sealedTextSql(context, sealer),
  };
}

export type OutboxSql = ReturnType<typeof createOutboxSql>;

export type { Claimed, ClaimRequest, HedgeRequest } from './sql-claims.js';
export {
  type AttemptResult,
  type Finished,
  type Settlement,
  settlementOf,
} from './sql-finish.js';
export type { ResendHook } from './sql-resend.js';
export type { RecoverOptions } from './sql-sweeps.js';
