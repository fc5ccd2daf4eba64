/**
 * The console's JSON API, as zod schemas: the server validates and documents its routes with
 * them (OpenAPI is generated from them) and the console types its client and forms with them.
 */
import { z } from 'zod';
import type { OperationDef } from './operations.js';
import { checkParam, type ValidateOptions } from './validate.js';

export const BINDINGS = ['soap11', 'soap12', 'http-get', 'http-post', 'console'] as const;
export const OUTCOMES = ['ok', 'client-error', 'server-error'] as const;
export const BUCKETS = ['minute', 'hour', 'day'] as const;

export const bindingSchema = z.enum(BINDINGS);
export const outcomeSchema = z.enum(OUTCOMES);
export type Binding = z.infer<typeof bindingSchema>;
export type Outcome = z.infer<typeof outcomeSchema>;

/** Human names for bindings, for tables and filters. */
export const BINDING_LABELS: Record<Binding, string> = {
  soap11: 'SOAP 1.1',
  soap12: 'SOAP 1.2',
  'http-get': 'HTTP GET',
  'http-post': 'HTTP POST',
  console: 'Console',
};

/** RFC 9457 problem details, the body of every API error. */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    /** Field-level problems, for forms: parameter or query name → message. */
    errors: z.record(z.string(), z.string()).optional(),
    /** The call record this problem was recorded as, when it was one (POST /api/operations). */
    callId: z.number().int().optional(),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof problemSchema>;

export const callSummarySchema = z
  .object({
    id: z.number().int(),
    /** ISO 8601, when the request arrived. */
    at: z.string(),
    group: z.string(),
    operation: z.string().nullable(),
    binding: bindingSchema,
    callerIp: z.string(),
    userAgent: z.string().nullable(),
    /** Parameters as received; auth codes masked. Null when none could be read. */
    params: z.record(z.string(), z.string()).nullable(),
    outcome: outcomeSchema,
    status: z.number().int(),
    error: z.string().nullable(),
    durationMs: z.number(),
  })
  .meta({ id: 'CallSummary' });
export type CallSummary = z.infer<typeof callSummarySchema>;

export const callDetailSchema = callSummarySchema
  .extend({
    /** The raw request as an HTTP message (selected headers and body), secrets masked, capped. */
    request: z.string(),
    requestBytes: z.number().int(),
    /** The raw response as an HTTP message, capped. */
    response: z.string(),
    responseBytes: z.number().int(),
  })
  .meta({ id: 'CallDetail' });
export type CallDetail = z.infer<typeof callDetailSchema>;

const isoDate = z.iso.datetime({ offset: true }).describe('ISO 8601 date and time');

/** Filters shared by the list, the live tail and the export. */
export const callFiltersSchema = z.object({
  operation: z.string().max(64).optional(),
  binding: bindingSchema.optional(),
  outcome: outcomeSchema.optional(),
  /** Inclusive lower bound on the call's time. */
  from: isoDate.optional(),
  /** Exclusive upper bound on the call's time. */
  to: isoDate.optional(),
  ip: z.string().max(64).optional(),
  /** Free text, matched in parameters and raw request and response. */
  q: z.string().max(200).optional(),
});
export type CallFilters = z.infer<typeof callFiltersSchema>;
export const CALL_FILTER_KEYS = Object.keys(callFiltersSchema.shape) as (keyof CallFilters)[];

export const callListQuerySchema = callFiltersSchema.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Opaque: the `nextCursor` of the previous page. */
  cursor: z.string().max(200).optional(),
});
export type CallListQuery = z.input<typeof callListQuerySchema>;

export const callListSchema = z
  .object({
    items: z.array(callSummarySchema),
    /** Pass as `cursor` for the next (older) page; null on the last page. */
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'CallList' });
export type CallList = z.infer<typeof callListSchema>;

export const exportQuerySchema = callFiltersSchema.extend({
  format: z.enum(['csv', 'json']).default('csv'),
});

export const statsQuerySchema = z.object({
  from: isoDate.optional(),
  to: isoDate.optional(),
  bucket: z.enum(BUCKETS).default('hour'),
});
export type StatsQuery = z.input<typeof statsQuerySchema>;

export const statsSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    bucket: z.enum(BUCKETS),
    /** One row per bucket, operation and outcome that had calls; buckets are ISO start times. */
    rows: z.array(
      z.object({
        bucket: z.string(),
        operation: z.string().nullable(),
        outcome: outcomeSchema,
        count: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'Stats' });
export type Stats = z.infer<typeof statsSchema>;

export const operationResultSchema = z
  .object({
    /** The call record's id (see GET /api/calls/{id}). */
    id: z.number().int(),
    outcome: outcomeSchema,
    status: z.number().int(),
    /** What happened, in words: 'Done.' or the error the caller would get. */
    message: z.string(),
  })
  .meta({ id: 'OperationResult' });
export type OperationResult = z.infer<typeof operationResultSchema>;

export const serviceInfoSchema = z
  .object({
    namespace: z.string(),
    baseUrl: z.string(),
    groups: z.array(
      z.object({
        name: z.string(),
        title: z.string(),
        path: z.string(),
        url: z.string(),
        wsdl: z.string(),
        help: z.string(),
        operations: z.array(
          z.object({
            name: z.string(),
            summary: z.string(),
            help: z.string(),
            params: z.array(z.object({ name: z.string(), description: z.string() })),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'ServiceInfo' });
export type ServiceInfo = z.infer<typeof serviceInfoSchema>;

/**
 * The input of an operation as a zod object, with the contract's rules: the console's forms and
 * the API's validation use this same schema. Every parameter is a required string.
 */
export function operationInputSchema(op: OperationDef, options: ValidateOptions = {}) {
  const shape: Record<string, z.ZodType<string>> = {};
  for (const param of op.params) {
    shape[param.name] = z
      .string({ error: `Missing parameter: ${param.name}.` })
      .superRefine((value, ctx) => {
        const checked = checkParam(param, value, options);
        if (!checked.ok) ctx.addIssue({ code: 'custom', message: checked.message });
      })
      .describe(param.description);
  }
  return z.object(shape);
}
