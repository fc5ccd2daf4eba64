import { EventEmitter } from 'node:events';

/**
 * Whether the database can be used now, and what a failure says about it (docs/monitoring.md#faults).
 * One owner for the question every door, the dispatcher and /readyz ask: SQLite is always up once
 * open; PostgreSQL is up once connected and migrated, down while its watch connection cannot reach
 * it (store/pg-watch.ts), and up again as soon as it can.
 */

/** Thrown instead of trying the database while it is known to be unreachable: fail fast. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  readonly code = 'DATABASE_UNAVAILABLE';
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`The database cannot be reached: ${reason}`, options);
  }
}

/** Node's codes for a connection that could not be made or was lost. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * PostgreSQL's SQLSTATEs for a server that is not taking work now: connection exceptions (08…),
 * shut down by an administrator or a crash, starting up, too many connections.
 */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1-3]|53300)$/;
/** node-postgres' own words for a connection it lost or could not open in time. */
const PG_CONNECTION_MESSAGE =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Query read timeout|Client was closed and is not queryable/i;

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether `err` says the PostgreSQL server could not be reached or the connection to it was lost. */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof DatabaseUnavailableError) return true;
  const code = codeOf(err);
  if (code !== undefined && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
  if (PG_CONNECTION_MESSAGE.test(err.message)) return true;
  // Node tries every address of a name (localhost: ::1, then 127.0.0.1) and gathers the failures.
  if (err instanceof AggregateError) return err.errors.some(isConnectionError);
  return false;
}

/** Whether `err` says the disk is full (SQLite's SQLITE_FULL, a file write's ENOSPC). */
export function isDiskFullError(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Whether `err` is one the caller should be told to retry (503 and `Retry-After`), not a failure
 * of the server's own: the database unreachable, or the disk full.
 */
export function isUnavailableError(err: unknown): boolean {
  return isConnectionError(err) || isDiskFullError(err);
}

/**
 * Whether connecting failed in a way no retry will mend: the server refused the credentials, the
 * role or the database does not exist. The process stops with this message rather than retrying.
 */
export function configurationProblem(err: unknown): string | undefined {
  const code = codeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (code === '28P01' || code === '28000')
    return `PostgreSQL refused the credentials in DATABASE_URL: ${message}`;
  if (code === '3D000') return `The database in DATABASE_URL does not exist: ${message}`;
  // node-postgres' SCRAM exchange when the URL has no password and the server asks for one.
  if (/^SASL: /.test(message))
    return `PostgreSQL asked for a password DATABASE_URL does not give: ${message}`;
  return undefined;
}

/** An error as the log and /readyz say it: its code and message, no stack. */
export function describeError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return describeError(err.errors[0]);
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}

/** What the database's state is, for /readyz, /healthz, the Service page and the log. */
export interface DatabaseStatus {
  /** Connected, and every migration this build knows applied. */
  readonly up: boolean;
  /** Why not, in words; null when up. */
  readonly reason: string | null;
  /** When this state began (epoch ms). */
  readonly since: number;
}

export interface Availability {
  /** The state now. */
  status(): DatabaseStatus;
  /** Throws DatabaseUnavailableError while the database is known to be unreachable. */
  check(): void;
  /**
   * A query failed with `err`: a lost connection asks for a check of the database now (one
   * dropped connection is not an outage; the check tells).
   */
  observe(err: unknown): void;
  /** The database answered (the watch connection, or the start-up migration). */
  markUp(): void;
  /** The database did not answer; `reason` says how. */
  markDown(reason: string): void;
  /** Resolves the next time the database is up (at once when it is). */
  whenUp(): Promise<void>;
  /** `up` and `down` as they happen; `check` when a failure asks for a check now. */
  readonly events: EventEmitter<{ up: []; down: [reason: string]; check: [] }>;
}

/** The availability of a database that is always there once open (SQLite). */
export function alwaysAvailable(): Availability {
  const since = Date.now();
  return {
    status: () => ({ up: true, reason: null, since }),
    check() {},
    observe() {},
    markUp() {},
    markDown() {},
    whenUp: () => Promise.resolve(),
    events: new EventEmitter(),
  };
}

/**
 * The availability of a database that may go away (PostgreSQL): down from the start with
 * `startingReason` until the first markUp.
 */
export function trackAvailability(startingReason: string): Availability {
  let state: DatabaseStatus = { up: false, reason: startingReason, since: Date.now() };
  const events = new EventEmitter<{ up: []; down: [reason: string]; check: [] }>();
  // Every waiter for `up` (the dispatcher, a start-up job) is one listener.
  events.setMaxListeners(0);
  return {
    status: () => state,
    check() {
      if (!state.up) throw new DatabaseUnavailableError(state.reason ?? 'unknown');
    },
    observe(err) {
      if (state.up && isConnectionError(err)) events.emit('check');
    },
    markUp() {
      if (state.up) return;
      state = { up: true, reason: null, since: Date.now() };
      events.emit('up');
    },
    markDown(reason) {
      if (!state.up) {
        // Still down: the newest reason, the same start.
        state = { ...state, reason };
        return;
      }
      state = { up: false, reason, since: Date.now() };
      events.emit('down', reason);
    },
    whenUp() {
      if (state.up) return Promise.resolve();
      return new Promise((resolve) => events.once('up', resolve));
    },
    events,
  };
}
