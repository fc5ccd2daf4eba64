import { ipAllowList } from '../net/ip-allow-list.js';
import { isUnavailableError, type Store } from '../store/index.js';
import { allowedRanges, normalizeBaseUrl } from './schools.js';

/**
 * Which school a call belongs to (docs/security.md#who-sees-what), decided as it is recorded and
 * kept with it (`calls.school_id`; its deliveries get the same): whose staff see it. In order:
 *   1. the school its `baseUrlSchool` names, when that is a registered school;
 *   2. from the console, the school the staff user acted for (`actingForSchoolId`), if any;
 *   3. otherwise, for the operations that name no school (AuthCode, GetBookPdfByTerm, pushNoti),
 *      the school whose `allowedIps` hold the caller's address, when exactly one school's do:
 *      an address several schools share, or none, tells nothing, and the call belongs to none.
 * A console call of a user limited to schools belongs only to one of theirs: a send refused for
 * another school belongs to none. A call that belongs to no school is seen by organisation-wide
 * staff only.
 *
 * It is decided from a copy of the schools kept in memory (SchoolDirectory), not a query per call.
 */

/** The operations whose calls name no school: their caller's address may tell whose they are. */
const BY_CALLER = new Set(['AuthCode', 'GetBookPdfByTerm', 'pushNoti']);

/** A school a staff user's call may belong to: one of theirs, or none (organisation-wide staff's). */
const theirs = (call: CallForSchool, id: number): number | null =>
  !call.staffSchoolIds || call.staffSchoolIds.includes(id) ? id : null;

/** What a call's school is decided from. */
export interface CallForSchool {
  readonly operation: string | null;
  /** Its parameters as received or normalised (null: none could be read). */
  readonly params: Readonly<Record<string, string>> | null;
  readonly callerIp: string;
  /**
   * From the console: the school the staff user acted for, or null when they named none (the
   * caller's address then tells nothing: staff are not a school's servers). Undefined for the
   * `.asmx` doors.
   */
  readonly actingForSchoolId?: number | null | undefined;
  /**
   * From the console: the schools the staff user is limited to (null: organisation-wide). A call of
   * theirs belongs only to one of these: a send refused for another school is not that school's.
   */
  readonly staffSchoolIds?: readonly number[] | null | undefined;
  /**
   * The operation found the school its `baseUrlSchool` names registered (it answered, or refused
   * the caller for that school): a copy that does not know it yet is read again, once.
   */
  readonly schoolFound?: boolean | undefined;
}

export interface SchoolDirectory {
  /** The school a call belongs to (see above), or null when none. */
  schoolOf(call: CallForSchool): Promise<number | null>;
}

interface Snapshot {
  readonly byBaseUrl: ReadonlyMap<string, number>;
  /** The schools restricted to address ranges, each with a test of an address. */
  readonly ranged: readonly { readonly id: number; readonly allows: (ip: string) => boolean }[];
  /**
   * The school of each address asked about (null: none, or several): a school's servers call from
   * a few addresses, so each address's test of every school's ranges is made once per copy.
   */
  readonly byAddress: Map<string, number | null>;
}

/** Addresses remembered per copy at most (a flood from many addresses starts it afresh). */
const MAX_ADDRESSES = 10_000;

/** How long the copy is used before it is read again in the background (other instances' changes). */
const REFRESH_MS = 10_000;

/**
 * The schools as the decision needs them, kept in memory: read at first use, again at once after
 * this process changes a school (store.schools.onChange), and every REFRESH_MS in the background
 * for the changes other instances make (their calls are decided from the previous copy meanwhile).
 */
export function createSchoolDirectory(
  store: Store,
  log?: { warn(obj: unknown, msg: string): void },
): SchoolDirectory {
  /** The copy, with the count of this process's changes it was read after and when it was read. */
  let copy: { snapshot: Snapshot; changes: number; readAt: number } | undefined;
  let changes = 0;
  let reading: Promise<void> | undefined;
  store.schools.onChange(() => {
    changes++;
  });

  /** Reads the schools (one read at a time: a caller arriving meanwhile waits for it). */
  const read = (): Promise<void> => {
    reading ??= (async () => {
      const after = changes;
      const readAt = Date.now();
      try {
        const rows = await store.schools.list();
        const byBaseUrl = new Map<string, number>();
        const ranged: { id: number; allows: (ip: string) => boolean }[] = [];
        for (const row of rows) {
          byBaseUrl.set(row.base_url, row.id);
          const ranges = allowedRanges(row);
          if (ranges.length > 0) ranged.push({ id: row.id, allows: ipAllowList(ranges) });
        }
        copy = { snapshot: { byBaseUrl, ranged, byAddress: new Map() }, changes: after, readAt };
      } catch (err) {
        // The database away: the copy there is goes on (the call's record waits for it anyway).
        if (!isUnavailableError(err)) log?.warn({ err }, 'could not read the schools for deciding calls');
      } finally {
        reading = undefined;
      }
    })();
    return reading;
  };

  /**
   * The copy: read first when there is none or this process has changed a school since (a read
   * under way that began before the change does not count); else refreshed in the background.
   */
  const current = async (): Promise<Snapshot | undefined> => {
    for (let tries = 0; tries < 3 && (!copy || copy.changes < changes); tries++) await read();
    if (copy && Date.now() - copy.readAt >= REFRESH_MS) void read();
    return copy?.snapshot;
  };

  const byCaller = (schools: Snapshot, ip: string): number | null => {
    const known = schools.byAddress.get(ip);
    if (known !== undefined) return known;
    let found: number | null = null;
    for (const school of schools.ranged) {
      if (!school.allows(ip)) continue;
      // Several schools hold the address: whose call it is cannot be told.
      if (found !== null) {
        found = null;
        break;
      }
      found = school.id;
    }
    if (schools.byAddress.size >= MAX_ADDRESSES) schools.byAddress.clear();
    schools.byAddress.set(ip, found);
    return found;
  };

  return {
    async schoolOf(call) {
      let schools = await current();
      if (!schools) return null;
      const named = call.params?.baseUrlSchool;
      const baseUrl = named === undefined ? undefined : normalizeBaseUrl(named);
      if (baseUrl !== undefined) {
        let id = schools.byBaseUrl.get(baseUrl);
        // Registered since the copy was read (on another instance): read it again, once.
        if (id === undefined && call.schoolFound) {
          await read();
          schools = copy?.snapshot ?? schools;
          id = schools.byBaseUrl.get(baseUrl);
        }
        if (id !== undefined) return theirs(call, id);
      }
      if (call.actingForSchoolId !== undefined)
        return call.actingForSchoolId === null ? null : theirs(call, call.actingForSchoolId);
      return call.operation !== null && BY_CALLER.has(call.operation)
        ? byCaller(schools, call.callerIp)
        : null;
    },
  };
}
