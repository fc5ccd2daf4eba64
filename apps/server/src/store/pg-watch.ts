import pg from 'pg';
import { type Availability, describeError as describe } from './availability.js';
import { createPause } from './pause.js';
import type { StatementPart } from './statement-parts.js';

/** The channel committed calls are announced on, to every instance (LISTEN/NOTIFY). */
export const CALLS_CHANNEL = 'school_calls';

/** A notification's payload: which instance committed which calls. Kept well under 8000 bytes. */
export interface CallsNotice {
  /** The instance that committed them (it has told its own listeners already). */
  readonly from: string;
  readonly ids: readonly number[];
  /**
   * Some of these calls queued deliveries: every instance's dispatcher may claim them now (false or
   * left out: none did).
   */
  readonly queued?: boolean;
}

/** Ids per notification: 350 ids of up to 16 digits, each with a comma and a space, stay under PostgreSQL's 8000-byte payload limit. */
export const IDS_PER_NOTICE = 350;

/**
 * The store's part of the call recorder's group commit (statement-parts.ts): the batch's calls,
 * read from `calls` (ord, id), announced to every instance's watch connection (this one's too,
 * which knows its own), IDS_PER_NOTICE ids a notification. PostgreSQL delivers a NOTIFY when its
 * transaction commits, and only then. Its parameters: this instance's id, and whether some of the
 * calls queued deliveries (`announcedBy`).
 */
export function announceCallsPart(calls: string, first: number): StatementPart {
  return {
    ctes: `store_announced AS (
      SELECT pg_notify('${CALLS_CHANNEL}', json_build_object('from', $${first}::text,
        'ids', json_agg(id ORDER BY ord), 'queued', $${first + 1}::boolean)::text)
      FROM ${calls} GROUP BY (ord - 1) / ${IDS_PER_NOTICE})`,
    columns: '(SELECT count(*) FROM store_announced) AS store_announced',
    parameters: 2,
  };
}

/** The values of announceCallsPart's parameters. */
export const announcedBy = (from: string, queued: boolean): unknown[] => [from, queued];

/** What the watch says in the log (pino's shape). */
export interface WatchLog {
  info(obj: object, message: string): void;
  warn(obj: object, message: string): void;
}

export interface WatchOptions {
  readonly connectionString: string;
  /** This instance's id: its own notices are not news to it. */
  readonly self: string;
  readonly availability: Availability;
  /** Calls committed by other instances, and whether some queued deliveries. */
  readonly onCalls: (ids: number[], queued: boolean) => void;
  readonly log: WatchLog;
  /** Between checks while the database is up (ms). */
  readonly upIntervalMs?: number;
  /** Between attempts while it is down (ms). */
  readonly downIntervalMs?: number;
  /** A check taking longer than this counts as failed (ms). */
  readonly timeoutMs?: number;
  /** Opening the watch connection (connect and LISTEN) taking longer than this counts as failed (ms). */
  readonly connectTimeoutMs?: number;
}

export interface PgWatch {
  close(): Promise<void>;
}

/** Now, by the database's clock, in epoch milliseconds: instances compare their heartbeats by it. */
const DB_NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** pg's words for a query that got no answer within its `query_timeout`. */
const NO_ANSWER = /Query read timeout/i;

/**
 * The watch connection (PostgreSQL): one connection of its own, outside the pool, that LISTENs for
 * calls committed by other instances (a pooled connection cannot hold a LISTEN) and checks the
 * database every `upIntervalMs` (1 s) by writing this instance's heartbeat (the `instances` table;
 * outside the pool, so a busy pool never delays it). It is what says the database is up or down
 * (availability.ts):
 * - a check with no answer within `timeoutMs` (2 s: a frozen server, a network that hangs) makes
 *   it down at once, so an outage of that kind is known within 3 s;
 * - a connection dropping or refused is tried again at once on a new connection, and a second
 *   failure in a row makes it down: one connection an administrator ended is not an outage.
 * While down it tries every `downIntervalMs`, and the first connection that LISTENs and answers
 * makes it up again. A failed query elsewhere asks for a check at once (`check`), so an outage is
 * known within a round trip rather than at the next interval. An outage is one warning in the log
 * as it begins and one line as it ends, with how long it lasted. Notifications sent while it was
 * down are not replayed: the live tail misses them, History has every call.
 */
export function watchPostgres(options: WatchOptions): PgWatch {
  const { availability, log } = options;
  const upIntervalMs = options.upIntervalMs ?? 1000;
  const downIntervalMs = options.downIntervalMs ?? 500;
  const timeoutMs = options.timeoutMs ?? 2000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 2000;
  let client: pg.Client | undefined;
  let closed = false;
  /** Between checks; cut short when a check is asked for, the connection is lost, or it closes. */
  const pause = createPause();
  /** This watch said the database went down, and has not yet said it is back. */
  let saidDown = false;

  const dropClient = () => {
    const c = client;
    client = undefined;
    // Ending a connection that already failed can itself fail: nothing more to do with it.
    c?.end().catch(() => {});
  };

  async function open(): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: options.connectionString,
      application_name: 'school-messaging-watch',
      connectionTimeoutMillis: connectTimeoutMs,
      query_timeout: timeoutMs,
      keepAlive: true,
    });
    // Every connection handles `error`: one without a listener would end the process.
    c.on('error', () => {
      if (client === c) {
        dropClient();
        pause.wake();
      }
    });
    c.on('end', () => {
      if (client === c) {
        client = undefined;
        pause.wake();
      }
    });
    c.on('notification', (message) => {
      if (message.channel !== CALLS_CHANNEL || !message.payload) return;
      try {
        const notice = JSON.parse(message.payload) as CallsNotice;
        if (notice.from !== options.self && Array.isArray(notice.ids))
          options.onCalls(notice.ids.map(Number), notice.queued === true);
      } catch {
        // Not ours (another program on the channel): ignored.
      }
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CALLS_CHANNEL}`);
    } catch (err) {
      c.end().catch(() => {});
      throw err;
    }
    return c;
  }

  const onCheck = () => pause.wake();
  availability.events.on('check', onCheck);

  async function run(): Promise<void> {
    /** Failures in a row: the first one after being up is retried at once. */
    let failures = 0;
    while (!closed) {
      try {
        if (!client) client = await open();
        if (closed) break;
        // The check is this instance's heartbeat: a write, by the database's clock, that the
        // others read to tell whether it is alive (outbox: claims of a silent instance are taken over).
        await client.query(
          `INSERT INTO instances (id, started_at, seen_at) VALUES ($1, ${DB_NOW_MS}, ${DB_NOW_MS})
           ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at`,
          [options.self],
        );
        failures = 0;
        const status = availability.status();
        // Said only after an outage this watch reported (not at start).
        if (!status.up && saidDown) {
          log.info(
            { downForMs: Date.now() - status.since },
            'the database can be reached again: calls are taken again',
          );
          saidDown = false;
        }
        availability.markUp();
        await pause.wait(upIntervalMs);
      } catch (err) {
        dropClient();
        if (closed) break;
        failures++;
        const reason = describe(err);
        // One dropped connection (an idle kill, a failover's first moment) is tried again at once;
        // no answer at all is not mended by asking again.
        if (failures === 1 && availability.status().up && !NO_ANSWER.test(reason)) continue;
        availability.markDown(
          NO_ANSWER.test(reason) ? `no answer within ${timeoutMs} ms (${reason})` : reason,
        );
        if (!saidDown) {
          log.warn(
            { reason },
            'the database cannot be reached: calls are refused (SOAP: a 500 fault; HTTP GET/POST: 503; with Retry-After) until it answers again',
          );
          saidDown = true;
        }
        await pause.wait(downIntervalMs);
      }
    }
  }

  const running = run();
  return {
    async close() {
      closed = true;
      availability.events.off('check', onCheck);
      pause.wake();
      await running;
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
