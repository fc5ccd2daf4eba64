/**
 * The console's JSON API, as zod schemas: the server validates and documents its routes with
 * them (OpenAPI is generated from them) and the console types its client and forms with them.
 */
import { z } from 'zod';
import { auditEntrySchema } from './auth.js';

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
    /** A login: the password was right; now the second factor's code is needed. */
    secondFactorRequired: z.boolean().optional(),
    /** `REQUIRE_TOTP`: this user must set up a second factor before anything else. */
    secondFactorSetupRequired: z.boolean().optional(),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof problemSchema>;

/**
 * Where a call's deliveries stand, for staff: `waiting` (not tried yet), `retrying` (tried and
 * failed, tried again later), `sending`, `sent`, `logged` (written to the server's log, nothing
 * sent), `dead` (given up) or `expired` (an auth code not sent within its validity).
 */
export const CALL_DELIVERY_STATES = [
  'waiting',
  'retrying',
  'sending',
  'sent',
  'logged',
  'dead',
  'expired',
] as const;
export type CallDeliveryState = (typeof CALL_DELIVERY_STATES)[number];

/** The deliveries of one call: the state of the one furthest from sent, and how many there are. */
export const callDeliverySchema = z
  .object({
    state: z.enum(CALL_DELIVERY_STATES),
    /** How many deliveries the call queued (an SMS, or one push per topic). */
    count: z.number().int(),
  })
  .meta({ id: 'CallDelivery' });
export type CallDelivery = z.infer<typeof callDeliverySchema>;

/** History's delivery filter: `failed`, calls with a delivery that is dead or expired. */
export const CALL_DELIVERY_FILTERS = ['failed'] as const;

/**
 * The school a call belongs to, decided once as it was recorded (`calls.school_id`;
 * docs/security.md#what-belongs-to-a-school): its id, and its name, or null when the school has
 * been deleted since (the call keeps the id).
 */
export const callSchoolSchema = z
  .object({
    id: z.number().int(),
    name: z.string().nullable(),
  })
  .meta({ id: 'CallSchool' });
export type CallSchool = z.infer<typeof callSchoolSchema>;

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
    /** What the operation did, in words (e.g. 'SMS queued to +44…', 'Dispatched 3 pending pushes.'). */
    note: z.string().nullable(),
    /** The id the request was logged under (`reqId`): the proxy's X-Request-Id or a UUID. Null for calls recorded before it was kept. */
    requestId: z.string().nullable(),
    /**
     * What became of the SMS or pushes the call queued, in a list: null when it queued none.
     * Absent from the live tail's events (looked up when the list is read, not as calls arrive).
     */
    delivery: callDeliverySchema.nullable().optional(),
    /**
     * The school the call belongs to (CallSchool), null when it belongs to none: such a call is
     * seen by organisation-wide staff only. On the list's items and a call's page; absent from the
     * live tail's events, the exports and the privacy report.
     */
    school: callSchoolSchema.nullable().optional(),
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

/**
 * The `operation` filter's value for calls whose operation was not recognised (a path or name the
 * service does not have): no operation can be named so.
 */
export const UNKNOWN_OPERATION = '(unknown)';

/** Filters shared by the list, the live tail and the export. */
export const callFiltersSchema = z.object({
  /** An operation's name, or `(unknown)` for calls to a path or operation the service does not have. */
  operation: z.string().max(64).optional(),
  binding: bindingSchema.optional(),
  outcome: outcomeSchema.optional(),
  /** Inclusive lower bound on the call's time. */
  from: isoDate.optional(),
  /** Exclusive upper bound on the call's time. */
  to: isoDate.optional(),
  ip: z.string().max(64).optional(),
  /**
   * A phone number: AuthCode calls to it. International (`+447400123456`), or national in the
   * server's DEFAULT_PHONE_REGION; 400 when it is no phone number.
   */
  phone: z.string().max(64).optional(),
  /** `failed`: calls whose SMS or push went dead or expired (it did not reach the phone). */
  delivery: z.enum(CALL_DELIVERY_FILTERS).optional(),
  /**
   * Free text, matched in the parameters, the raw request and response, the error text and the
   * note. Wholly a phone number, it is that number's calls (see CallList's `search.phone`).
   */
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

/**
 * How a free-text search (`q`) went. It scans newest first under a time budget; when the budget
 * runs out before the page is full it stops, says so, and `nextCursor` continues the scan.
 */
export const textSearchSchema = z
  .object({
    /** False when the search stopped early: the page may hold fewer matches than asked for. */
    complete: z.boolean(),
    /** Calls examined for this page. */
    scanned: z.number().int(),
    /** ISO 8601 time of the oldest call examined; null when none was. */
    scannedBack: z.string().nullable(),
    /**
     * Set when the text is wholly a phone number (as the `phone` filter takes it): the search was
     * for that number's calls (E.164 here), through the phone's index, and is complete. The same
     * number in double quotes is searched as text.
     */
    phone: z.string().optional(),
  })
  .meta({ id: 'TextSearch' });
export type TextSearch = z.infer<typeof textSearchSchema>;

export const callListSchema = z
  .object({
    items: z.array(callSummarySchema),
    /** Pass as `cursor` for the next (older) page; null on the last page. */
    nextCursor: z.string().nullable(),
    /** With `q` only: whether the search covered the page or stopped early (see TextSearch). */
    search: textSearchSchema.optional(),
  })
  .meta({ id: 'CallList' });
export type CallList = z.infer<typeof callListSchema>;

/** Counting stops here: a History view with more calls says "more than 10 000". */
export const CALL_COUNT_BOUND = 10_000;

/** `GET /api/calls/count`: the calls the filters match (free text is not counted). */
export const callCountSchema = z
  .object({
    /** The calls counted, at most CALL_COUNT_BOUND. */
    count: z.number().int(),
    /** True when there are more than `count` (counting stopped at the bound). */
    more: z.boolean(),
  })
  .meta({ id: 'CallCount' });
export type CallCount = z.infer<typeof callCountSchema>;

export const exportQuerySchema = callFiltersSchema.extend({
  format: z.enum(['csv', 'json']).default('csv'),
});

export const statsQuerySchema = z.object({
  from: isoDate.optional(),
  to: isoDate.optional(),
  bucket: z.enum(BUCKETS).default('hour'),
});
export type StatsQuery = z.input<typeof statsQuerySchema>;

const errorOutcomeSchema = z.enum(['client-error', 'server-error']);

export const statsSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    bucket: z.enum(BUCKETS),
    /** One row per bucket, operation and outcome that had calls; buckets are ISO start times. */
    rows: z.array(
      z.object({
        bucket: z.string(),
        /** Null: calls to a path or operation the service does not have. */
        operation: z.string().nullable(),
        outcome: outcomeSchema,
        count: z.number().int(),
      }),
    ),
    /**
     * How long calls took to answer, per bucket that had calls: median and 95th percentile in
     * milliseconds, estimated from a histogram (within a few per cent).
     */
    latency: z.array(
      z.object({ bucket: z.string(), count: z.number().int(), p50Ms: z.number(), p95Ms: z.number() }),
    ),
    /** The same over the whole period; null without calls. */
    overallLatency: z.object({ p50Ms: z.number(), p95Ms: z.number() }).nullable(),
    /** Every error status of the period with its count, most frequent first. */
    statuses: z.array(
      z.object({ status: z.number().int(), outcome: errorOutcomeSchema, count: z.number().int() }),
    ),
    /**
     * The most frequent errors by operation, status and text (its first 200 characters), most
     * frequent first; `otherErrors` counts the rest.
     */
    errors: z.array(
      z.object({
        operation: z.string().nullable(),
        status: z.number().int(),
        outcome: errorOutcomeSchema,
        error: z.string().nullable(),
        count: z.number().int(),
      }),
    ),
    otherErrors: z.number().int(),
    /**
     * The deliveries queued in each bucket (that had any), by what became of them: `sent` by a
     * provider, `logged` by the `log` provider (nothing sent), `dead`, `expired`, or `waiting`
     * (pending or being sent); and their failed attempts.
     */
    deliveries: z.array(
      z.object({
        bucket: z.string(),
        sent: z.number().int(),
        logged: z.number().int(),
        dead: z.number().int(),
        expired: z.number().int(),
        waiting: z.number().int(),
        failedAttempts: z.number().int(),
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
    /**
     * How many deliveries (SMS, pushes) the call queued: queued, not sent yet. Follow them with
     * GET /api/deliveries?callId={id}.
     */
    queued: z.number().int(),
  })
  .meta({ id: 'OperationResult' });
export type OperationResult = z.infer<typeof operationResultSchema>;

/**
 * The body's field, beside an operation's parameters, naming the school staff act for when they
 * send from the console (its id): the call belongs to it. A user limited to schools names one of
 * theirs for AuthCode, GetBookPdfByTerm and pushNoti; SendNotificationType and SendMarkNotes
 * belong to the school their `baseUrlSchool` names.
 */
export const ACTING_FOR_SCHOOL = 'schoolId';

/** A school staff may send for, as Send's School select shows it. */
export const sendSchoolSchema = z
  .object({ id: z.number().int(), name: z.string(), baseUrl: z.string() })
  .meta({ id: 'SendSchool' });
export type SendSchool = z.infer<typeof sendSchoolSchema>;

/** `GET /api/operations/schools`: the schools the logged-in user may send for, by name. */
export const sendSchoolListSchema = z
  .object({
    items: z.array(sendSchoolSchema),
    /** The user is organisation-wide: naming a school is optional. */
    organisationWide: z.boolean(),
  })
  .meta({ id: 'SendSchoolList' });
export type SendSchoolList = z.infer<typeof sendSchoolListSchema>;

/** A provider's circuit breaker: closed (sent to), open (not sent to, for a cool-down), half-open (probed). */
export const CIRCUIT_STATES = ['closed', 'half-open', 'open'] as const;

const providerInfoSchema = z.object({
  /** `log`, `twilio`, `http`, `fcm`, `webhook`. */
  name: z.string(),
  /** Its id in deliveries and attempts: the name, `-fallback` added for the SMS fallback. */
  id: z.string(),
  /** Secret-free: what it sends through (e.g. the From number), or that nothing leaves the machine. */
  description: z.string(),
  circuit: z.object({
    state: z.enum(CIRCUIT_STATES),
    since: z.string(),
    /** Open: when it is tried again (ISO 8601); null otherwise. */
    until: z.string().nullable(),
  }),
  /**
   * Set while its recorded attempts say it refuses the school's messages for good (its account
   * suspended, its credentials refused): the same on every instance, unlike the circuit. Cleared
   * by one message sent (docs/outbox.md#a-provider-that-refuses).
   */
  refusing: z
    .object({
      /** Its own words for its newest refusal ("account suspended"). */
      reason: z.string(),
      /** That refusal's HTTP status. */
      status: z.number().int().nullable(),
      /** When its first refusal since it last sent a message was recorded (ISO 8601). */
      since: z.string(),
      /** How many of `attempts` it refused. */
      refusals: z.number().int(),
      /** Its attempts since it last sent a message (the newest 50 at most). */
      attempts: z.number().int(),
    })
    .nullable(),
});
export type ProviderInfo = z.infer<typeof providerInfoSchema>;

export const serviceInfoSchema = z
  .object({
    namespace: z.string(),
    baseUrl: z.string(),
    /** The region national phone numbers are read in, when one is configured. */
    defaultPhoneRegion: z.string().nullable(),
    /** Where AuthCode sends SMS: the countries (ISO 3166; null: every one) and whether landlines too. */
    smsDestinations: z.object({
      allowedCountries: z.array(z.string()).nullable(),
      fixedLines: z.boolean(),
    }),
    providers: z.object({
      sms: providerInfoSchema,
      /** SMS_FALLBACK_PROVIDER's, when one is set. */
      smsFallback: providerInfoSchema.nullable(),
      push: providerInfoSchema,
    }),
    /**
     * The data folder's free space: raw request and response bodies stop being stored below the
     * minimum, and new calls are refused below the refusal threshold (null freeBytes: not checked,
     * PostgreSQL).
     */
    storage: z.object({
      freeBytes: z.number().nullable(),
      minFreeBytes: z.number(),
      refuseFreeBytes: z.number(),
      rawBodiesStored: z.boolean(),
      refusingCalls: z.boolean(),
      /** A write found the disk full: calls are refused whatever the thresholds, until space is freed. */
      full: z.boolean(),
    }),
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

// --- deliveries, schools, templates, books ------------------------------------------------------

/**
 * pending: waiting for its first try or a retry; sending: an attempt is under way; sent; dead: a
 * permanent error or too many attempts; expired: an auth code not sent within its validity, never
 * sent late.
 */
export const DELIVERY_STATUSES = ['pending', 'sending', 'sent', 'dead', 'expired'] as const;
export const deliveryStatusSchema = z.enum(DELIVERY_STATUSES);
export type DeliveryStatus = z.infer<typeof deliveryStatusSchema>;

/** The provider that sends nothing: it writes each message to the server's log (the default). */
export const LOG_PROVIDER = 'log';

/**
 * A delivery's status as the API answers it and filters by: the stored status, except that a
 * delivery the `log` provider took is `logged`, not `sent` (it was written to the server's log;
 * nothing left the machine). The store keeps such a delivery `sent`.
 */
export const DELIVERY_STATES = ['pending', 'sending', 'sent', 'logged', 'dead', 'expired'] as const;
export const deliveryStateSchema = z.enum(DELIVERY_STATES);
export type DeliveryState = z.infer<typeof deliveryStateSchema>;

/** The providers a delivery can go through: SMS_PROVIDER's, SMS_FALLBACK_PROVIDER's (with `-fallback`), PUSH_PROVIDER's. */
export const PROVIDER_NAMES = [
  LOG_PROVIDER,
  'twilio',
  'http',
  'twilio-fallback',
  'http-fallback',
  'fcm',
  'webhook',
] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** What a delivery carries: an SMS to a phone, or a push to a topic. */
export const DELIVERY_KINDS = ['sms', 'push'] as const;
export const deliveryKindSchema = z.enum(DELIVERY_KINDS);
export type DeliveryKind = z.infer<typeof deliveryKindSchema>;

/** How an attempt ended; `interrupted` when the server stopped during it. */
export const ATTEMPT_OUTCOMES = ['sent', 'transient', 'permanent', 'interrupted'] as const;
export const attemptOutcomeSchema = z.enum(ATTEMPT_OUTCOMES);
export type AttemptOutcome = z.infer<typeof attemptOutcomeSchema>;

export const deliverySchema = z
  .object({
    id: z.number().int(),
    callId: z.number().int(),
    kind: deliveryKindSchema,
    provider: z.string(),
    /** E.164 phone (SMS) or topic (push). */
    recipient: z.string(),
    /** SMS: the text with the auth code masked. Push: the notification's title. */
    title: z.string().nullable(),
    /** The SMS text (masked) or the push body. */
    text: z.string(),
    /** Push data, string values. */
    data: z.record(z.string(), z.string()).nullable(),
    /** `logged` rather than `sent` for the `log` provider (see DELIVERY_STATES). */
    status: deliveryStateSchema,
    attempts: z.number().int(),
    nextAttemptAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
    providerId: z.string().nullable(),
    /** What the provider reported later about the message (Twilio status callbacks). */
    providerStatus: z.string().nullable(),
    /**
     * A provider whose attempt ended without knowing whether it took the message (a timeout).
     * Sent later by another provider, the message may have arrived twice.
     */
    unsureProvider: z.string().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    sentAt: z.string().nullable(),
  })
  .meta({ id: 'Delivery' });
export type Delivery = z.infer<typeof deliverySchema>;

export const attemptSchema = z
  .object({
    id: z.number().int(),
    /** The provider this attempt went to (a fallback's ends in `-fallback`); null for attempts recorded before providers were. */
    provider: z.string().nullable(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    /** Null while under way; `interrupted` when the server stopped during it. */
    outcome: attemptOutcomeSchema.nullable(),
    status: z.number().int().nullable(),
    error: z.string().nullable(),
    /** The provider's answer, secret-free. */
    response: z.string().nullable(),
    retryAfterMs: z.number().int().nullable(),
  })
  .meta({ id: 'DeliveryAttempt' });
export type Attempt = z.infer<typeof attemptSchema>;

export const deliveryDetailSchema = deliverySchema.extend({ attemptLog: z.array(attemptSchema) }).meta({
  id: 'DeliveryDetail',
});
export type DeliveryDetail = z.infer<typeof deliveryDetailSchema>;

/** The filters of the deliveries list; they combine with AND. */
export const deliveryFiltersSchema = z.object({
  status: deliveryStateSchema.optional(),
  kind: deliveryKindSchema.optional(),
  /** The provider it was queued for (`log` sends nothing). */
  provider: z.enum(PROVIDER_NAMES).optional(),
  callId: z.coerce.number().int().positive().optional(),
  /**
   * Part of the recipient (phone or topic), any case. A phone may be typed with spaces, dashes or
   * dots, with 00 for + or with a national leading 0.
   */
  recipient: z.string().max(100).optional(),
  /** Queued at or after this time. */
  from: isoDate.optional(),
  /** Queued before this time. */
  to: isoDate.optional(),
});
export type DeliveryFilters = z.infer<typeof deliveryFiltersSchema>;
export const DELIVERY_FILTER_KEYS = Object.keys(deliveryFiltersSchema.shape) as (keyof DeliveryFilters)[];

export const deliveryListQuerySchema = deliveryFiltersSchema.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Opaque: the `nextCursor` of the previous page. */
  cursor: z.string().max(80).optional(),
});
export type DeliveryListQuery = z.input<typeof deliveryListQuerySchema>;

export const deliveryListSchema = z
  .object({
    items: z.array(deliverySchema),
    /** Pass as `cursor` for the next (older) page; null on the last page. */
    nextCursor: z.string().nullable(),
    /** How many deliveries are in each status (all the user may see, whatever the filters: their schools' when limited to some); `sent` leaves out `logged`. */
    counts: z.record(deliveryStateSchema, z.number().int()),
  })
  .meta({ id: 'DeliveryList' });
export type DeliveryList = z.infer<typeof deliveryListSchema>;

/** An IP address or CIDR range, IPv4 or IPv6: 203.0.113.7, 203.0.113.0/24, 2001:db8::/32. */
export const ipRangeSchema = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()], {
  error: 'Not an IP address or CIDR range (e.g. 203.0.113.0/24).',
});

/** Whether `text` is an IP address or CIDR range (see ipRangeSchema). */
export function isIpRange(text: string): boolean {
  return ipRangeSchema.safeParse(text).success;
}

export const schoolInputSchema = z.object({
  name: z.string().trim().min(1, 'Give the school a name.').max(200),
  baseUrl: z
    .string()
    .trim()
    .max(500)
    .refine(
      (v) => /^https?:\/\/[^/?#\s]+/i.test(v) && URL.canParse(v),
      'Enter the http(s) URL the school calls with, e.g. https://school.example.org/.',
    ),
  topicKey: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'Use 1 to 64 letters, digits, - or _ (it names the push topic).'),
  /** Empty: any caller. */
  allowedIps: z.array(z.string().trim().pipe(ipRangeSchema)).max(100).default([]),
});
export type SchoolInput = z.input<typeof schoolInputSchema>;

export const schoolSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    /** Normalised: lower-case scheme and host, no trailing slash. */
    baseUrl: z.string(),
    topicKey: z.string(),
    /** The push topics: typed notifications and, per class, marks. */
    topic: z.string(),
    allowedIps: z.array(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'School' });
export type School = z.infer<typeof schoolSchema>;

export const templateInputSchema = z.object({
  /** A notification type as sent in TypeNotfication; `*` is the generic fallback, `marks` is SendMarkNotes'. */
  type: z
    .string()
    .trim()
    .min(1, 'Give the notification type.')
    .max(100)
    .refine((v) => !/\s/.test(v), 'A type has no spaces.'),
  title: z.string().trim().min(1, 'Give a title.').max(200),
  body: z.string().trim().min(1, 'Give a body.').max(1000),
});
export type TemplateInput = z.input<typeof templateInputSchema>;

export const templateSchema = templateInputSchema
  .extend({ id: z.number().int(), updatedAt: z.string() })
  .meta({ id: 'Template' });
export type Template = z.infer<typeof templateSchema>;

/** Placeholders templates may use. */
export const TEMPLATE_PLACEHOLDERS = ['{type}', '{id}', '{id_class}', '{baseUrlSchool}', '{school}'] as const;

export const bookSchema = z
  .object({
    id: z.number().int(),
    termId: z.string(),
    classId: z.string(),
    sha256: z.string(),
    size: z.number().int(),
    filename: z.string(),
    uploadedAt: z.string(),
    /** The book over the HTTP GET binding, as apps fetch it. */
    url: z.string(),
  })
  .meta({ id: 'Book' });
export type Book = z.infer<typeof bookSchema>;

/**
 * `GET /api/privacy/report?phone=…` (admins): everything held about a phone number. The number may
 * be typed in any form the Phone filter takes (`+44 7400 123456`, `07400123456` in the server's
 * DEFAULT_PHONE_REGION, `0044…`, spaces, dashes, dots); 400 when it is no phone number.
 * `format=csv` (or `Accept: text/csv`) answers the same as a CSV download.
 */
export const privacyReportQuerySchema = z.object({
  phone: z.string().min(1).max(64),
  format: z.enum(['json', 'csv']).optional(),
});
export type PrivacyReportQuery = z.input<typeof privacyReportQuerySchema>;

/** Where a call holds the number: its phone column, or which of its texts. */
export const PRIVACY_CALL_FIELDS = ['phone', 'params', 'request', 'response', 'error', 'note'] as const;

export const privacyCallSchema = callDetailSchema
  .extend({
    /** Where this call holds the number. */
    heldIn: z.array(z.enum(PRIVACY_CALL_FIELDS)),
  })
  .meta({ id: 'PrivacyCall' });
export type PrivacyCall = z.infer<typeof privacyCallSchema>;

export const privacyReportSchema = z
  .object({
    /** The number as read, E.164. */
    phone: z.string(),
    /** The spellings looked for in the texts (E.164, its digits, the national number, …). */
    forms: z.array(z.string()),
    /** ISO 8601, when the report was made. */
    generatedAt: z.string(),
    /** Calls whose phone is the number or whose texts hold it, newest first. */
    calls: z.array(privacyCallSchema),
    /** Their deliveries, and SMS sent to the number, newest first, each with its attempts. */
    deliveries: z.array(deliveryDetailSchema),
    /** Audit entries that name the number (a send from the console), newest first. */
    audit: z.array(auditEntrySchema),
    /** AuthCode's per-number limit: slots taken for the number and still kept (PostgreSQL). */
    limitSlots: z.number().int(),
  })
  .meta({ id: 'PrivacyReport' });
export type PrivacyReport = z.infer<typeof privacyReportSchema>;

/** `POST /api/privacy/erase` (admins). */
export const privacyEraseInputSchema = z.object({ phone: z.string().min(1).max(64) });
export type PrivacyEraseInput = z.input<typeof privacyEraseInputSchema>;

/** What stands in the number's place once it is erased. */
export const ERASED = '[erased]';

/** What an erasure changed: counts of rows, and what was done so that the disk no longer holds it. */
export const privacyErasureSchema = z
  .object({
    /** The keyed hash (HMAC-SHA-256, hex) the erasure is audited by: never the number. */
    hash: z.string(),
    /** Calls whose phone or texts held the number (still counted in History and the Dashboard). */
    calls: z.number().int(),
    /** Deliveries whose recipient, texts or sealed text held it. */
    deliveries: z.number().int(),
    /** Of those, the ones on their way that were cancelled first (expired, never sent). */
    cancelled: z.number().int(),
    /** Delivery attempts whose provider answer or error held it. */
    attempts: z.number().int(),
    /** Audit entries that named it. */
    audit: z.number().int(),
    /** AuthCode limit slots kept for the number, deleted. */
    limitSlots: z.number().int(),
    /** Rows of the Dashboard's roll-ups whose text held it. */
    rollups: z.number().int(),
    /**
     * SQLite: freed pages overwritten (secure_delete) and the WAL checkpointed and truncated.
     * PostgreSQL: the tables and partitions VACUUMed after it (dead rows made reusable; see
     * docs/security.md for what VACUUM does not do).
     */
    disk: z.object({
      walTruncated: z.boolean().nullable(),
      vacuumed: z.array(z.string()),
    }),
    /** How long the erasure took, in milliseconds. */
    tookMs: z.number(),
  })
  .meta({ id: 'PrivacyErasure' });
export type PrivacyErasure = z.infer<typeof privacyErasureSchema>;
