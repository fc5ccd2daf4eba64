import {
  privacyEraseInputSchema,
  privacyErasureSchema,
  privacyReportQuerySchema,
  privacyReportSchema,
  problemSchema,
} from '@school/contract';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createHistory } from '../../history/index.js';
import { problem, sendProblem } from '../../http/problem.js';
import {
  eraseNumber,
  erasureHash,
  findHeld,
  type PrivacyDeps,
  UnreadablePhoneError,
} from '../../privacy/erasure.js';
import { searchUnavailable } from './call-mapping.js';
import { privacyReportCsv, toPrivacyReport } from './privacy-report.js';

/** The audit's words for a number: its keyed hash, never the number. */
const targetOf = (hash: string) => `phone number (keyed hash ${hash.slice(0, 16)}…)`;

/**
 * A parent's phone number: what is held about it, and its erasure (admins only, the scope's rule;
 * docs/security.md#a-parents-phone-number-report-and-erasure). Both audited by the number's keyed
 * hash.
 */
export const privacyRoutes: FastifyPluginAsync = async (base) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const { store, config } = app;
  // What is erased includes the calls just recorded: with a read replica, History is read on the
  // primary here (its live tail is never started).
  const history = store.reads === store.db ? app.history : createHistory({ ...store, reads: store.db });
  if (history !== app.history) app.addHook('onClose', () => history.close());
  const deps: PrivacyDeps = {
    store,
    history,
    sealer: app.sealer,
    defaultPhoneRegion: config.DEFAULT_PHONE_REGION,
    leaseMs: config.deliveryLeaseMs,
  };

  /** A phone that is none, a search that cannot run now: the problem; anything else thrown on. */
  const refused = (reply: FastifyReply, err: unknown): FastifyReply => {
    if (err instanceof UnreadablePhoneError) {
      return sendProblem(reply, problem(400, err.message, { errors: { phone: err.message } }));
    }
    return searchUnavailable(reply, err, config.SEARCH_BUDGET_MS);
  };

  app.get(
    '/privacy/report',
    {
      schema: {
        summary: 'Everything held about a phone number',
        description:
          'The calls whose phone is the number or whose texts hold it in any spelling, their deliveries and attempts, SMS sent to it, the audit entries naming it, and the limit slots kept for it. JSON, or CSV with `format=csv` (or `Accept: text/csv`) as a download. Audited by the number’s keyed hash.',
        tags: ['privacy'],
        querystring: privacyReportQuerySchema,
        produces: ['application/json', 'text/csv'],
        response: { 200: privacyReportSchema, 400: problemSchema, 503: problemSchema },
      },
    },
    async (request, reply) => {
      const { phone, format } = request.query;
      const csv =
        format === 'csv' || (format === undefined && /\btext\/csv\b/.test(request.headers.accept ?? ''));
      let report: ReturnType<typeof toPrivacyReport>;
      try {
        report = toPrivacyReport(await findHeld(deps, phone), Date.now());
      } catch (err) {
        return refused(reply, err);
      }
      const hash = erasureHash(app.sealer, report.phone);
      await app.audit(request, {
        action: 'privacy-report',
        target: targetOf(hash),
        details: {
          hash,
          format: csv ? 'csv' : 'json',
          calls: report.calls.length,
          deliveries: report.deliveries.length,
          audit: report.audit.length,
        },
      });
      reply.header('cache-control', 'no-store');
      if (!csv) return report;
      const stamp = report.generatedAt.replace(/[-:]/g, '').replace(/\..*/, '');
      // Text with a content type of its own is sent as it is: the JSON schema's serializer is not
      // run on it (Fastify serializes objects, and strings only when they are JSON).
      const text: unknown = privacyReportCsv(report);
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="privacy-report-${stamp}.csv"`)
        .send(text as typeof report);
    },
  );

  app.post(
    '/privacy/erase',
    {
      schema: {
        summary: 'Erase a phone number everywhere it is held',
        description:
          'Cancels what is still on its way to the number, then replaces the number by `[erased]` in every call, delivery, attempt, audit entry and roll-up that holds it (the rows stay: counts and the Dashboard do not change), empties the calls’ phone and the SMS’ recipients and sealed texts, and deletes its limit slots; then checkpoints SQLite’s log or VACUUMs what PostgreSQL rewrote. Answers what changed; audited by the number’s keyed hash.',
        tags: ['privacy'],
        body: privacyEraseInputSchema,
        response: { 200: privacyErasureSchema, 400: problemSchema, 503: problemSchema },
      },
    },
    async (request, reply) => {
      let erased: Awaited<ReturnType<typeof eraseNumber>>;
      try {
        erased = await eraseNumber(deps, request.body.phone);
      } catch (err) {
        return refused(reply, err);
      }
      const { hash, tookMs: _took, disk, ...counts } = erased;
      await app.audit(request, {
        action: 'privacy-erase',
        target: targetOf(hash),
        details: { hash, ...counts, walTruncated: disk.walTruncated, vacuumed: disk.vacuumed.length },
      });
      reply.header('cache-control', 'no-store');
      return erased;
    },
  );
};
