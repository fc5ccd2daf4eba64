import type { Kysely } from 'kysely';
import { providerReason } from '../providers/http.js';
import type { Database } from '../store/index.js';
import type { AttemptOutcome } from './schema.js';

/**
 * Whether a provider refuses the school's messages for good, from the attempts recorded
 * (docs/outbox.md#a-provider-that-refuses): what staff are shown comes from outcomes, shared by
 * every instance on the database, not from one instance's circuit (a refusal is no failure to a
 * circuit that a cool-down cures).
 *
 * A refusal here is the provider refusing the sender rather than one message: a permanent outcome
 * with 401, 402 or 403 (credentials, payment, a suspended account). An invalid number's 400 says
 * the provider works, as it does to the circuit. A provider is refusing when its newest finished
 * attempt was not sent and either its last REFUSALS_IN_A_ROW finished attempts were refusals, or
 * REFUSALS_IN_WINDOW of its last WINDOW were; one attempt sent clears it.
 */
export const WINDOW = 10;
export const REFUSALS_IN_A_ROW = 3;
export const REFUSALS_IN_WINDOW = 8;
/** Statuses that refuse the sender, whatever the message. */
export const ACCOUNT_REFUSALS: ReadonlySet<number> = new Set([401, 402, 403]);
/** How many of a provider's attempts the count and the start of a refusal go back over. */
export const RUN_MAX = 50;
/**
 * The newest attempts, of every provider, read: the read costs the same however many were
 * recorded, through the attempts' key. A provider with none among them is not refusing as far
 * as is known.
 */
export const SCAN = 1000;

/** A provider refusing: its own words, since when, and how many of its attempts. */
export interface Refusing {
  /** The provider's reason, from its newest refusal ("account suspended"). */
  readonly reason: string;
  /** That refusal's HTTP status. */
  readonly status: number | null;
  /** When its first refusal since it last sent one finished (epoch ms). */
  readonly since: number;
  /** Refusals among `attempts`. */
  readonly refusals: number;
  /** Its finished attempts since it last sent one (at most RUN_MAX). */
  readonly attempts: number;
}

/** A finished attempt as the rule reads it. */
export interface Outcome {
  readonly id: number;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly outcome: AttemptOutcome;
  readonly status: number | null;
}

const refused = (o: Outcome) =>
  o.outcome === 'permanent' && o.status !== null && ACCOUNT_REFUSALS.has(o.status);

/**
 * The rule, on a provider's finished attempts newest first (up to RUN_MAX): its refusal run, with
 * the newest refusal to read the reason from, or undefined when it is not refusing.
 */
export function refusalRun(
  outcomes: readonly Outcome[],
): (Omit<Refusing, 'reason' | 'status'> & { newest: Outcome }) | undefined {
  const [newest] = outcomes;
  if (newest === undefined || newest.outcome === 'sent') return undefined;
  const window = outcomes.slice(0, WINDOW);
  const inARow = window.findIndex((o) => !refused(o));
  const leading = inARow === -1 ? window.length : inARow;
  const inWindow = window.filter(refused).length;
  if (leading < REFUSALS_IN_A_ROW && inWindow < REFUSALS_IN_WINDOW) return undefined;
  const lastSent = outcomes.findIndex((o) => o.outcome === 'sent');
  const run = lastSent === -1 ? outcomes : outcomes.slice(0, lastSent);
  const refusals = run.filter(refused);
  const first = refusals[refusals.length - 1] as Outcome;
  return {
    since: first.finishedAt,
    refusals: refusals.length,
    attempts: run.length,
    newest: refusals[0] as Outcome,
  };
}

/**
 * Each of `providers` (ids) refusing, or null: two reads, each bounded whatever the traffic — the
 * newest SCAN attempts with their providers' last RUN_MAX ranked in the database, and the newest
 * refusal's text of each refusing one by its key.
 */
export async function readRefusing(
  db: Kysely<Database>,
  providers: readonly string[],
): Promise<Map<string, Refusing | null>> {
  const out = new Map<string, Refusing | null>(providers.map((p) => [p, null]));
  if (providers.length === 0) return out;
  const rows = await recentOutcomes(db, providers).execute();
  const byProvider = new Map<string, Outcome[]>();
  for (const r of rows) {
    const list = byProvider.get(r.provider as string) ?? [];
    list.push({
      id: r.id,
      startedAt: r.started_at,
      finishedAt: r.finished_at ?? r.started_at,
      outcome: r.outcome as AttemptOutcome,
      status: r.status,
    });
    byProvider.set(r.provider as string, list);
  }
  for (const [provider, outcomes] of byProvider) {
    const run = refusalRun(outcomes);
    if (!run) continue;
    const { newest, ...counts } = run;
    out.set(provider, { ...(await reasonOf(db, newest)), ...counts });
  }
  return out;
}

/**
 * The last RUN_MAX finished attempts of each of `providers` among the newest SCAN attempts: the
 * attempts' key read backwards (on PostgreSQL, each partition's, merged), ranked per provider.
 */
export function recentOutcomes(db: Kysely<Database>, providers: readonly string[]) {
  const recent = db
    .selectFrom('delivery_attempts')
    .select(['id', 'provider', 'started_at', 'finished_at', 'outcome', 'status'])
    .orderBy('id', 'desc')
    .limit(SCAN);
  const ranked = db
    .selectFrom(recent.as('recent'))
    .select(['id', 'provider', 'started_at', 'finished_at', 'outcome', 'status'])
    .select((eb) =>
      eb.fn
        .agg<number>('row_number')
        .over((ob) => ob.partitionBy('provider').orderBy('id', 'desc'))
        .as('n'),
    )
    .where('outcome', 'is not', null)
    .where('provider', 'in', providers);
  return db
    .selectFrom(ranked.as('ranked'))
    .selectAll()
    .where('n', '<=', RUN_MAX)
    .orderBy('provider')
    .orderBy('id', 'desc');
}

/** A refusal's reason in the provider's own words (its answer), else the error recorded. */
async function reasonOf(
  db: Kysely<Database>,
  o: Outcome,
): Promise<{ reason: string; status: number | null }> {
  const row = await db
    .selectFrom('delivery_attempts')
    .select(['error', 'response'])
    .where('id', '=', o.id)
    // Its own partition alone (PostgreSQL).
    .where('started_at', '=', o.startedAt)
    .executeTakeFirst();
  const reason =
    providerReason(row?.response ?? '') ??
    // The error ends with the status, said apart.
    row?.error?.replace(/\s*\(HTTP \d{3}\)$/, '') ??
    'no reason given';
  return { reason, status: o.status };
}
