import type { Kysely, QueryCreator, SelectQueryBuilder } from 'kysely';
import {
  type Database,
  type DialectName,
  type Outcome,
  type SchoolScope,
  schoolCondition,
} from '../store/index.js';
import {
  bucketOf,
  callsBetween,
  ceilHour,
  errorTextSql,
  floorHour,
  HOUR_MS,
  LATENCY_BINS_PER_E,
  latencyBinSql,
} from './call-rollups.js';
import { type DeliveryGroup, deliveryGroups, rolledDeliveryGroups } from './delivery-rollups.js';

/** A period cut in buckets: epoch milliseconds, `to` exclusive. */
export interface StatsRange {
  readonly from: number;
  readonly to: number;
  readonly bucketMs: number;
}

export interface StatsRow {
  readonly bucket: number;
  readonly operation: string | null;
  readonly outcome: Outcome;
  readonly count: number;
}

/** How long the calls of a bucket took to answer, estimated from a histogram (see LATENCY_BINS_PER_E). */
export interface LatencyRow {
  readonly bucket: number;
  readonly count: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

/** Calls that went wrong with one status and one error text (the first ERROR_TEXT_MAX characters). */
export interface ErrorRow {
  readonly operation: string | null;
  readonly status: number;
  readonly outcome: Exclude<Outcome, 'ok'>;
  readonly error: string | null;
  readonly count: number;
}

/**
 * The deliveries queued in a bucket, by what became of them: sent through a provider, `logged`
 * (taken by the `log` provider: written to the server's log, nothing sent), dead, expired (an auth
 * code not sent in time), or still `waiting` (pending or being sent); with their failed attempts
 * (every attempt that did not send: failed, or interrupted by a stop).
 */
export interface DeliveryStatsRow {
  readonly bucket: number;
  readonly sent: number;
  readonly logged: number;
  readonly dead: number;
  readonly expired: number;
  readonly waiting: number;
  readonly failedAttempts: number;
}

export interface CallStats {
  /** Counts per bucket, operation and outcome, for the buckets that had calls. */
  readonly rows: StatsRow[];
  readonly latency: LatencyRow[];
  /** Over the whole period; null without calls. */
  readonly overallLatency: { readonly p50Ms: number; readonly p95Ms: number } | null;
  /** Every error status of the period with its count, most frequent first. */
  readonly statuses: {
    readonly status: number;
    readonly outcome: Exclude<Outcome, 'ok'>;
    readonly count: number;
  }[];
  /** The most frequent errors (operation, status and text), at most `errorLimit`. */
  readonly errors: ErrorRow[];
  /** Errors of the period that `errors` leaves out. */
  readonly otherErrors: number;
  readonly deliveries: DeliveryStatsRow[];
}

// Durations are counted in logarithmic bins, LATENCY_BINS_PER_E per factor e (each about 13 %
// wider than the last): a bucket's percentiles come from at most a hundred numbers, whatever its
// calls, on both databases alike, and are within a few per cent of the exact ones. Errors are
// grouped by their first ERROR_TEXT_MAX characters. Both as the roll-ups have them (call-rollups.ts).
/** Distinct error groups kept while counting: texts beyond it are counted without their text. */
const MAX_ERROR_GROUPS = 5000;
/** On SQLite, one slice of the period should take about this long (the thread serves calls in between). */
const SLICE_TARGET_MS = 8;
const MIN_SLICE_MS = 60_000;
const FIRST_SLICE_MS = 3_600_000;

/**
 * Counts per time bucket, operation and outcome, in one query straight from the calls: what the
 * tests hold `callStats`'s rows to.
 */
export async function bucketCounts(db: Kysely<Database>, range: StatsRange): Promise<StatsRow[]> {
  const rows = await db
    .selectFrom('calls')
    .select((eb) => [
      bucketOf('at', range.bucketMs).as('bucket'),
      'operation',
      'outcome',
      eb.fn.countAll<number>().as('count'),
    ])
    .where('at', '>=', range.from)
    .where('at', '<', range.to)
    .groupBy(['bucket', 'operation', 'outcome'])
    .orderBy('bucket')
    .execute();
  return rows.map((r) => ({ ...r, bucket: Number(r.bucket), count: Number(r.count) }));
}

/** What the slices of a period add up to, before it is turned into CallStats. */
interface Totals {
  readonly counts: Map<string, { bucket: number; operation: string | null; outcome: Outcome; count: number }>;
  readonly bins: Map<number, Map<number, number>>;
  readonly errors: Map<string, ErrorRow>;
  readonly deliveries: Map<number, { -readonly [K in keyof DeliveryStatsRow]: DeliveryStatsRow[K] }>;
}

/** What a slice reads from the raw tables: the calls, the deliveries, or both; and whose. */
interface Parts {
  readonly calls: boolean;
  readonly deliveries: boolean;
  /** The schools of a member of staff limited to some; undefined or null: the organisation. */
  readonly scope?: SchoolScope | undefined;
}

/**
 * Adds the calls and deliveries of [from, to) to `totals`. Four queries, sent at once: PostgreSQL
 * runs them side by side on pooled connections; SQLite's one connection runs them in turn.
 */
async function addSlice(
  db: Kysely<Database>,
  bucketMs: number,
  from: number,
  to: number,
  totals: Totals,
  parts: Parts,
) {
  const none = Promise.resolve([] as never[]);
  const [counts, bins, errors, deliveries] = await Promise.all([
    !parts.calls
      ? none
      : callsBetween(db, from, to, parts.scope)
          .select((eb) => [
            bucketOf('at', bucketMs).as('bucket'),
            'operation',
            'outcome',
            eb.fn.countAll<number>().as('count'),
          ])
          .groupBy(['bucket', 'operation', 'outcome'])
          .execute(),
    !parts.calls
      ? none
      : callsBetween(db, from, to, parts.scope)
          .select((eb) => [
            bucketOf('at', bucketMs).as('bucket'),
            latencyBinSql.as('bin'),
            eb.fn.countAll<number>().as('count'),
          ])
          .groupBy(['bucket', 'bin'])
          .execute(),
    !parts.calls
      ? none
      : callsBetween(db, from, to, parts.scope)
          .select((eb) => [
            'operation',
            'status',
            'outcome',
            errorTextSql.as('error'),
            eb.fn.countAll<number>().as('count'),
          ])
          .where('outcome', 'in', ['client-error', 'server-error'])
          .groupBy(['operation', 'status', 'outcome', errorTextSql])
          .execute(),
    parts.deliveries ? deliveryGroups(db, bucketMs, from, to, parts.scope) : none,
  ]);

  for (const r of counts) addCount(totals, Number(r.bucket), r.operation, r.outcome, Number(r.count));
  for (const r of bins) addBin(totals, Number(r.bucket), Number(r.bin), Number(r.count));
  for (const r of errors) addError(totals, r.operation, r.status, r.outcome, r.error, Number(r.count));

  addDeliveries(totals, deliveries);
}

/**
 * Adds groups of deliveries to `totals`. Failed attempts from the deliveries' own count of
 * attempts: every attempt but the one that sent it (or is sending it) did not send it, whether it
 * failed or was interrupted.
 */
function addDeliveries(totals: Totals, groups: readonly DeliveryGroup[]): void {
  for (const r of groups) {
    let row = totals.deliveries.get(r.bucket);
    if (!row) {
      row = { bucket: r.bucket, sent: 0, logged: 0, dead: 0, expired: 0, waiting: 0, failedAttempts: 0 };
      totals.deliveries.set(r.bucket, row);
    }
    const n = r.count;
    if (r.status === 'sent') {
      if (r.logged === 1) row.logged += n;
      else row.sent += n;
    } else if (r.status === 'dead') row.dead += n;
    else if (r.status === 'expired') row.expired += n;
    else row.waiting += n;
    row.failedAttempts +=
      r.status === 'sent' || r.status === 'sending' ? Math.max(0, r.attempts - n) : r.attempts;
  }
}

function addCount(
  totals: Totals,
  bucket: number,
  operation: string | null,
  outcome: Outcome,
  n: number,
): void {
  const key = `${bucket}\u0000${operation ?? ''}\u0000${operation === null ? 1 : 0}\u0000${outcome}`;
  const seen = totals.counts.get(key);
  if (seen) seen.count += n;
  else totals.counts.set(key, { bucket, operation, outcome, count: n });
}

function addBin(totals: Totals, bucket: number, bin: number, n: number): void {
  let histogram = totals.bins.get(bucket);
  if (!histogram) {
    histogram = new Map();
    totals.bins.set(bucket, histogram);
  }
  histogram.set(bin, (histogram.get(bin) ?? 0) + n);
}

function addError(
  totals: Totals,
  operation: string | null,
  status: number,
  outcomeText: string,
  text: string | null,
  n: number,
): void {
  const outcome = outcomeText as ErrorRow['outcome'];
  let error = text;
  let key = errorKey(operation, status, outcome, error);
  if (!totals.errors.has(key) && totals.errors.size >= MAX_ERROR_GROUPS) {
    error = null;
    key = errorKey(operation, status, outcome, null);
  }
  const seen = totals.errors.get(key);
  if (seen) totals.errors.set(key, { ...seen, count: seen.count + n });
  else totals.errors.set(key, { operation, status, outcome, error, count: n });
}

/**
 * The roll-ups `scope` reads: the organisation's, or with a limited scope its schools' rows of the
 * tables per school, which have the same columns and `school_id`: read as the organisation's are.
 */
function rolled<T extends 'call_hours' | 'call_error_hours'>(
  db: QueryCreator<Database>,
  table: T,
  scope: SchoolScope | undefined,
): SelectQueryBuilder<Database, T, object> {
  const schools = schoolCondition(scope);
  if (!schools) return db.selectFrom(table) as SelectQueryBuilder<Database, T, object>;
  const perSchool = table === 'call_hours' ? 'school_call_hours' : 'school_call_error_hours';
  return db.selectFrom(perSchool).where(schools) as unknown as SelectQueryBuilder<Database, T, object>;
}

/** Adds the calls of the whole hours [from, to) from the roll-ups (call-rollups.ts), of `scope`. */
async function addRolled(
  db: Kysely<Database>,
  bucketMs: number,
  from: number,
  to: number,
  totals: Totals,
  scope: SchoolScope | undefined,
) {
  const [hours, errors] = await Promise.all([
    rolled(db, 'call_hours', scope)
      .select((eb) => [
        bucketOf('hour', bucketMs).as('bucket'),
        'operation',
        'outcome',
        'bin',
        eb.fn.sum<number>('count').as('count'),
      ])
      .where('hour', '>=', from)
      .where('hour', '<', to)
      .groupBy(['bucket', 'operation', 'outcome', 'bin'])
      .execute(),
    rolled(db, 'call_error_hours', scope)
      .select((eb) => ['operation', 'status', 'outcome', 'error', eb.fn.sum<number>('count').as('count')])
      .where('hour', '>=', from)
      .where('hour', '<', to)
      .groupBy(['operation', 'status', 'outcome', 'error'])
      .execute(),
  ]);
  for (const r of hours) {
    const bucket = Number(r.bucket);
    addCount(totals, bucket, r.operation, r.outcome, Number(r.count));
    addBin(totals, bucket, Number(r.bin), Number(r.count));
  }
  for (const r of errors) addError(totals, r.operation, r.status, r.outcome, r.error, Number(r.count));
}

const errorKey = (operation: string | null, status: number, outcome: string, error: string | null) =>
  `${operation === null ? '\u0001' : operation}\u0000${status}\u0000${outcome}\u0000${error === null ? '\u0001' : error}`;

/** The duration below which a fraction `p` of a histogram's calls fall, interpolated within its bin. */
export function percentileOf(histogram: ReadonlyMap<number, number>, p: number): number {
  const bins = [...histogram.entries()].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  const total = bins.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return 0;
  const rank = p * total;
  let below = 0;
  for (const [bin, n] of bins) {
    if (below + n >= rank) {
      const within = n === 0 ? 0 : (rank - below) / n;
      return Math.max(0, Math.exp((bin + within) / LATENCY_BINS_PER_E) - 1);
    }
    below += n;
  }
  const last = bins[bins.length - 1]?.[0] ?? 0;
  return Math.exp((last + 1) / LATENCY_BINS_PER_E) - 1;
}

const roundMs = (ms: number) => Math.round(ms * 10) / 10;

/**
 * The dashboard's figures for a period: calls per bucket, operation and outcome; latency (p50,
 * p95) per bucket; errors by status and by text; deliveries per bucket.
 *
 * On SQLite the period is read a slice at a time, each slice sized to take about SLICE_TARGET_MS,
 * with the event loop turned in between: the one connection and the one thread also answer the
 * endpoints, which must not wait for a month of statistics. Every figure adds up across slices.
 * PostgreSQL works in its own processes and reads the period at once.
 */
export async function callStats(
  db: Kysely<Database>,
  dialect: DialectName,
  range: StatsRange,
  options: {
    errorLimit?: number;
    /** The calls' roll-ups' watermark (call-rollups.ts): hours before it are read from them; null: none. */
    rolledUntil?: number | null;
    /** The deliveries' (delivery-rollups.ts), alike. */
    deliveriesRolledUntil?: number | null;
    /**
     * Whose figures: the schools of a member of staff limited to some (their calls' and
     * deliveries', from the roll-ups per school and the raw tables), or undefined or null for the
     * organisation's.
     */
    scope?: SchoolScope | undefined;
  } = {},
): Promise<CallStats> {
  const { scope } = options;
  const totals: Totals = { counts: new Map(), bins: new Map(), errors: new Map(), deliveries: new Map() };
  /** [from, to) from the raw tables, sliced on SQLite (see above). */
  const raw = async (from: number, to: number, parts: Parts) => {
    if (from >= to) return;
    if (dialect === 'postgres') {
      await addSlice(db, range.bucketMs, from, to, totals, parts);
      return;
    }
    let slice = FIRST_SLICE_MS;
    for (let start = from; start < to; ) {
      const end = Math.min(to, start + slice);
      const began = performance.now();
      await addSlice(db, range.bucketMs, start, end, totals, parts);
      const took = performance.now() - began;
      start = end;
      // Sized by what the last one took, within a factor of 4 of it.
      const scaled = (slice * SLICE_TARGET_MS) / Math.max(took, 0.5);
      slice = Math.max(MIN_SLICE_MS, Math.round(Math.min(slice * 4, Math.max(slice / 4, scaled))));
      if (start < to) await new Promise((resolve) => setImmediate(resolve));
    }
  };

  // The whole hours the roll-ups hold (buckets of whole hours only): from them; the edges of the
  // period and the hours not rolled up yet, from the calls and the deliveries.
  const rolled = (until: number | null | undefined): [number, number] | undefined => {
    const start = ceilHour(range.from);
    const end = until === null || until === undefined ? start : Math.min(floorHour(range.to), until);
    return range.bucketMs % HOUR_MS === 0 && end > start ? [start, end] : undefined;
  };
  const rolledCalls = rolled(options.rolledUntil);
  const rolledDeliveries = rolled(options.deliveriesRolledUntil);
  if (!rolledCalls && !rolledDeliveries) {
    await raw(range.from, range.to, { calls: true, deliveries: true, scope });
  } else {
    if (rolledCalls) {
      const [start, end] = rolledCalls;
      await raw(range.from, start, { calls: true, deliveries: false, scope });
      await addRolled(db, range.bucketMs, start, end, totals, scope);
      await raw(end, range.to, { calls: true, deliveries: false, scope });
    } else await raw(range.from, range.to, { calls: true, deliveries: false, scope });
    if (rolledDeliveries) {
      const [start, end] = rolledDeliveries;
      await raw(range.from, start, { calls: false, deliveries: true, scope });
      addDeliveries(totals, await rolledDeliveryGroups(db, range.bucketMs, start, end, scope));
      await raw(end, range.to, { calls: false, deliveries: true, scope });
    } else await raw(range.from, range.to, { calls: false, deliveries: true, scope });
  }

  const rows = [...totals.counts.values()].sort(
    (a, b) =>
      a.bucket - b.bucket ||
      (a.operation ?? '\uffff').localeCompare(b.operation ?? '\uffff') ||
      a.outcome.localeCompare(b.outcome),
  );
  const latency = [...totals.bins.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([bucket, histogram]) => ({
      bucket,
      count: [...histogram.values()].reduce((a, b) => a + b, 0),
      p50Ms: roundMs(percentileOf(histogram, 0.5)),
      p95Ms: roundMs(percentileOf(histogram, 0.95)),
    }));
  const all = new Map<number, number>();
  for (const histogram of totals.bins.values())
    for (const [bin, n] of histogram) all.set(bin, (all.get(bin) ?? 0) + n);
  const overallLatency =
    all.size === 0
      ? null
      : { p50Ms: roundMs(percentileOf(all, 0.5)), p95Ms: roundMs(percentileOf(all, 0.95)) };

  const byStatus = new Map<string, { status: number; outcome: ErrorRow['outcome']; count: number }>();
  for (const e of totals.errors.values()) {
    const key = `${e.status}\u0000${e.outcome}`;
    const seen = byStatus.get(key);
    if (seen) seen.count += e.count;
    else byStatus.set(key, { status: e.status, outcome: e.outcome, count: e.count });
  }
  const statuses = [...byStatus.values()].sort((a, b) => b.count - a.count || a.status - b.status);
  const ranked = [...totals.errors.values()].sort(
    (a, b) =>
      b.count - a.count ||
      a.status - b.status ||
      (a.operation ?? '').localeCompare(b.operation ?? '') ||
      (a.error ?? '').localeCompare(b.error ?? ''),
  );
  const errorLimit = options.errorLimit ?? 20;
  const errors = ranked.slice(0, errorLimit);
  const otherErrors = ranked.slice(errorLimit).reduce((n, e) => n + e.count, 0);
  const deliveries = [...totals.deliveries.values()].sort((a, b) => a.bucket - b.bucket);
  return { rows, latency, overallLatency, statuses, errors, otherErrors, deliveries };
}
