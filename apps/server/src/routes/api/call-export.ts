import { Readable } from 'node:stream';
import { type CallFilters, exportQuerySchema } from '@school/contract';
import type { FastifyRequest } from 'fastify';
import { endWithSession } from '../../auth/session-watch.js';
import type { CallQuery, RowScan } from '../../history/index.js';
import type { CallRow, CallSummaryRow } from '../../store/index.js';
import { CSV_HEADER, csvLine, detailJson, searchUnavailable } from './call-mapping.js';
import type { ZodApp } from './zod-app.js';

// Rows read per query while exporting: sized so that a batch's text comes to about
// EXPORT_BATCH_BYTES (from the previous batch's bytes per row), within these bounds. A batch's
// text is held whole (one Buffer), so memory stays flat whatever the total; fewer, larger batches
// mean fewer queries and less per-batch garbage living long enough to be promoted. A JSON row
// carries the raw request and response (up to RECORD_MAX_BYTES each, 64 KiB by default): its
// bound keeps a batch of such rows near 32 MB, where a batch that follows small rows could reach it.
const EXPORT_BATCH = { first: 100, min: 100, max: { csv: 1000, json: 250 } } as const;
const EXPORT_BATCH_BYTES = 512 * 1024;

/**
 * An export batch's text, written straight into a Buffer (UTF-8) as its rows come: no string of
 * the whole batch is built. Starts at `bytes` (the previous batch's size: no copy once the first
 * batch has grown to fit) and grows by doubling; `take()` answers what was written.
 */
class BatchText {
  #buffer: Buffer;
  #length = 0;

  constructor(start: string, bytes = 16 * 1024) {
    this.#buffer = Buffer.allocUnsafe(bytes);
    if (start) this.write(start);
  }

  get capacity(): number {
    return this.#buffer.length;
  }

  write(text: string): void {
    // A UTF-16 unit takes at most 3 bytes in UTF-8 (a surrogate pair 4 for 2 units).
    const room = this.#length + text.length * 3;
    if (room > this.#buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(room, 2 * this.#buffer.length));
      this.#buffer.copy(bigger, 0, 0, this.#length);
      this.#buffer = bigger;
    }
    this.#length += this.#buffer.write(text, this.#length);
  }

  take(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }
}

/** GET /calls/export: every call the filters match, as CSV or JSON, streamed as the client reads. */
export function exportRoute({
  app,
  queryOf,
  budgetMs,
}: {
  readonly app: ZodApp;
  /** The filters as History searches them, within the staff user's schools (calls.ts). */
  readonly queryOf: (filters: CallFilters, request: FastifyRequest) => { query: CallQuery };
  /** SEARCH_BUDGET_MS: the Retry-After of a 503 when the search worker is busy. */
  readonly budgetMs: number;
}): void {
  const { history } = app;
  app.get(
    '/calls/export',
    {
      schema: {
        summary: 'Export calls as CSV or JSON',
        description:
          'Every call that passes the filters, newest first, streamed. CSV has one row per call without raw messages; JSON is an array of CallDetail. With `q`, the search runs to the end (no time budget); 503 (with Retry-After) when too many free-text searches run at once.',
        tags: ['calls'],
        querystring: exportQuerySchema,
        produces: ['text/csv', 'application/json'],
      },
    },
    (request, reply) => {
      const { format, ...filters } = request.query;
      const { query } = queryOf(filters, request);
      const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
      // Pull-based: a batch is read only when the client has taken the previous one (one push per
      // read()), and each row is written into the batch's Buffer as the database hands it over:
      // no row, and no text of a batch, outlives its turn, so memory stays flat however many calls.
      let text = new BatchText(format === 'csv' ? CSV_HEADER : '[');
      let written = 0;
      let rows = 0;
      let batchSize: number = EXPORT_BATCH.first;
      const toText =
        format === 'csv'
          ? (row: CallSummaryRow) => {
              text.write(csvLine(row));
              rows++;
            }
          : (row: CallRow) => {
              rows++;
              text.write(written === 0 ? '\n' : ',\n');
              text.write(detailJson(row));
              written++;
            };
      // With free text this takes a slot in the search worker now, or throws: answer 503 then.
      let scan: RowScan;
      try {
        scan = history.scanRows(
          query,
          { batchSize: EXPORT_BATCH.first, summaries: format === 'csv' },
          toText as (row: CallSummaryRow) => void,
        );
      } catch (err) {
        return searchUnavailable(reply, err, budgetMs);
      }
      // An export under way ends with its session (a logout, a user disabled) like the live feed.
      const unwatch = endWithSession(app, request, () =>
        body.destroy(new Error('the session ended during the export')),
      );
      const body = new Readable({
        highWaterMark: 64 * 1024,
        read() {
          scan
            .next(batchSize)
            .then((more) => {
              if (!more && format === 'json') text.write('\n]\n');
              const chunk = text.take();
              if (rows > 0) {
                const perRow = Math.max(1, chunk.length / rows);
                batchSize = Math.round(
                  Math.min(EXPORT_BATCH.max[format], Math.max(EXPORT_BATCH.min, EXPORT_BATCH_BYTES / perRow)),
                );
              }
              rows = 0;
              text = new BatchText('', text.capacity);
              if (chunk.length > 0) this.push(chunk);
              if (!more) {
                unwatch();
                this.push(null);
              }
            })
            .catch((err: unknown) => this.destroy(err as Error));
        },
        destroy(err, callback) {
          unwatch();
          scan.close();
          callback(err);
        },
      });
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="calls-${stamp}.${format}"`)
        .header('cache-control', 'no-store')
        .send(body);
    },
  );
}
