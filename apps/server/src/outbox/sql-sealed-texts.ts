import type { Sealer } from '../secrets/sealer.js';
import type { DeliveryRow } from './deliveries.js';
import { UNSETTLED_SMS, unsealedText } from './payload.js';
import type { OutboxSqlContext } from './sql-context.js';

/** An SMS's sealed text: opened for an attempt, and sealed where a release before sealing kept it in clear. */
export function sealedTextSql({ db }: OutboxSqlContext, sealer: Sealer) {
  return {
    /**
     * The text to send of a claimed SMS, opened from its sealed `secret`; throws SealedValueError
     * when it does not open (another key), and answers '' when it is gone (settled).
     */
    openText(row: Pick<DeliveryRow, 'secret' | 'idempotency_key'>): string {
      return row.secret === null ? '' : sealer.open(row.secret, row.idempotency_key);
    },

    /**
     * Seals the clear text of SMS queued by a release that kept it in the `payload` column; runs at
     * start. Returns how many.
     */
    async sealLegacyTexts(): Promise<number> {
      // Unsettled SMS only: a settled one already kept just its masked text. The statuses as an
      // OR of equalities: PostgreSQL then reads each through the partial index of its few (those
      // on their way, 0022; the failed, 0021), where an IN read every delivery kept, at every
      // start, once 0027 dropped the status index there (docs/performance.md#what-each-index-costs-and-serves).
      const rows = await db
        .selectFrom('deliveries')
        .select(['id', 'status', 'payload', 'idempotency_key'])
        .where('kind', '=', 'sms')
        .where((eb) => eb.or(UNSETTLED_SMS.map((status) => eb('status', '=', status))))
        .where('secret', 'is', null)
        .execute();
      let sealed = 0;
      for (const row of rows) {
        const clear = unsealedText(row);
        if (clear?.text === undefined) continue;
        await db
          .updateTable('deliveries')
          .set({ secret: sealer.seal(clear.text, row.idempotency_key), payload: clear.payload })
          .where('id', '=', row.id)
          .where('secret', 'is', null)
          .execute();
        sealed++;
      }
      return sealed;
    },
  };
}
